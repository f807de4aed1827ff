package client

import (
	"context"
	"fmt"
	"sync"
	"time"
	"unsafe"

	"tessera/internal/block"
	"tessera/internal/meta"
	"tessera/internal/placement"
)

// recipeWindow is how many block hashes the client fetches from the meta
// service at a time.
const recipeWindow = 1024

// file is the client's state for one inode that is open (or being
// truncated): its committed recipe as last seen, and its uncommitted changes.
type file struct {
	c   *Client
	ino meta.Ino

	mu   sync.Mutex
	cond sync.Cond // signalled when an upload finishes; uses mu
	// visible is held for writing by a write that commits before it
	// returns (commit per write, O_SYNC), from before its data lands in
	// the buffers until its commit, and for reading by reads that must
	// not see a write before it is visible to every client (linearizable
	// policies, O_RSYNC). Taken before mu.
	visible sync.RWMutex
	opens   int // guarded by Client.mu
	loaded  bool
	// unlinked: the inode lost its last name while open; reap on release.
	unlinked bool // guarded by Client.mu

	bs      int64
	size    int64 // as this client sees it, including uncommitted writes
	change  uint64
	windows map[uint64][]block.Hash // committed recipe, by window
	// comps are the compositions of composed blocks this file met in its
	// recipe, its conflicts and its own uploads (compose.go).
	comps        map[block.Hash]meta.Composition
	compsPruneAt int // prune comps past this many (learnCompsLocked)
	hasInline    bool
	inline       []byte

	dirty     map[uint64]*dblock // written, not yet uploading
	inflight  map[uint64]*dblock // uploading
	nInflight int
	pending   map[uint64]pend // uploaded, not yet committed
	seq       uint64
	truncated bool  // the next commit sets the size exactly
	metaDirty bool  // size or mtime changed since the last commit
	mtime     int64 // mtime of the latest uncommitted write
	err       error // first failed upload since the last commit
	// failures counts uploads of this file that failed in a row: a failed
	// block waits uploadBackoff.Delay(failures) before the flusher tries it again.
	failures int
	// lost is set when writes this client had accepted were lost (their
	// blocks vanished before a commit could name them): every later write
	// and commit of the file fails with it until the file is closed
	// everywhere in this client, so no commit records the writes around
	// the loss with holes where the lost data was.
	lost error
	// doubt: a commit of the file failed in a way that leaves unknown
	// whether the meta service applied it (its store's answer was lost):
	// a conflict of the next commit is then not redone unless it shows
	// that attempt applied (sendLocked).
	doubt    bool
	replicas placement.Spec // copies per block; the zero Spec = the cluster's default
	// policyName is the inode's own consistency policy ("" = the mount's).
	policyName string
	xattrs     xattrCache // guarded by Client.mu
	// committedSize is the size at the latest commit this client made or
	// saw; writes counts writes since then and firstWrite is when the
	// first of them came (for the policies' commit knobs).
	committedSize int64
	// committed is the inode as this client's latest commit left it
	// (the meta service's reply; Ino 0 before one).
	committed  meta.Inode
	writes     int
	firstWrite time.Time
	// forced: commits install this client's blocks without comparing the
	// old hashes (last writer wins the whole block); false: a conflict is
	// redone on top of the current blocks (redo.go). See Handle.SetForced.
	forced bool
	// repls are the replications of blocks uploaded since the last fsync,
	// which waits until every copy was tried.
	repls []*replication
	// versions is, by block index, the newest version of a block this
	// client uploaded (scheduleLocked): the memory cache keeps a composed
	// one's write buffer, and a version fetched while it waited for its
	// commit; an older one is dropped from the cache when a newer one is
	// uploaded, so a block under small writes holds one buffer there, not
	// one per version.
	versions map[uint64]version
	// tails are, by block index, the version whose buffer an append may
	// write on in place (appends.go).
	tails map[uint64]tail
	// superseded are uploads replaced before a commit named them; the
	// next commit has the meta service release them (CommitReq.Superseded).
	superseded []block.Hash

	// Callbacks (callbacks.go): cbq holds the ones not yet applied (it is
	// a leaf lock, taken with or without mu); stale says an invalidation
	// left size and recipe to be read again.
	cbq struct {
		sync.Mutex
		q []meta.Callback
	}
	stale bool
	// attr is the inode as last read from the meta service; it answers a
	// stat while the service is unavailable (StatFallback).
	attr meta.Inode
	// pendAttr is an attribute change held for the next commit
	// (pendattr.go).
	pendAttr pendAttr
	// unleased: the session that leased the cached state may have ended
	// (the meta service was unreachable or restarted); it is revalidated
	// before a use that needs it (catchUpLocked).
	unleased bool
}

// dblock is one dirty block. buf holds the block's content from its start;
// bytes past len(buf) are zeros.
type dblock struct {
	idx uint64
	buf []byte
	seq uint64
	base
	// own are the ranges written into buf since it was made; base.sp also
	// holds those inherited from the uploading or uploaded version it was
	// made from (redo.go rebases on them after a commit).
	own spans
	// retryAt: the block's upload failed; the flusher leaves it until then
	// (a commit retries it at once).
	retryAt time.Time
	// cut: a truncate cut the block, so it is never composed (compose.go).
	cut bool
	// baseLen is the block's length when the dirty block was made: a
	// block an append grew to the block size is stored whole (compose.go).
	baseLen int64
	// shared: buf[:shared] belongs to the version this dirty block was
	// appended to, and is copied before a write changes it; tail: buf is
	// its block's tail since it was scheduled (appends.go).
	shared int64
	tail   bool
}

// version is a version of a block this client uploaded.
type version struct {
	h   block.Hash
	seq uint64
}

// pend is an uploaded block waiting for its commit.
type pend struct {
	h   block.Hash
	seq uint64
	at  time.Time // when the upload finished (touchOldLocked)
	// comp: h was uploaded as patches over base.old (compose.go).
	comp *meta.Composition
	base
}

// base is what an optimistic commit of a changed block needs: the hash of
// the committed content the change was made on (the commit's Old) and the
// ranges this client changed since the commit that installed that content.
// It goes with the block from dirty through inflight and pending to the
// commit that installs it.
type base struct {
	old    block.Hash
	oldSet bool // false: old is the committed hash the commit finds (a whole-block write)
	sp     spans
}

// load fills the file's state from in; called once, with f.mu held.
func (f *file) loadLocked(in meta.Inode) {
	f.loaded = true
	f.attr = in
	f.bs = int64(in.BlockSize)
	if f.bs <= 0 {
		f.bs = meta.DefaultBlockSize
	}
	f.size = int64(in.Size)
	f.change = in.Change
	f.hasInline = in.HasInline
	f.inline = in.Inline
	f.replicas = specOf(in.Attr)
	f.policyName = in.Policy
	f.committedSize = int64(in.Size)
	f.windows = make(map[uint64][]block.Hash)
	f.comps = nil
	f.dirty = make(map[uint64]*dblock)
	f.inflight = make(map[uint64]*dblock)
	f.pending = make(map[uint64]pend)
	f.cond.L = &f.mu
}

// refreshLocked adopts a newer committed state from the meta service when
// this client has no uncommitted change of its own.
func (f *file) refreshLocked(in meta.Inode) {
	f.attr = in
	f.policyName = in.Policy
	f.replicas = specOf(in.Attr)
	if in.Change == f.change || len(f.dirty) > 0 || f.nInflight > 0 || len(f.pending) > 0 || f.metaDirty {
		return
	}
	f.committedSize = int64(in.Size)
	f.size = int64(in.Size)
	f.change = in.Change
	f.hasInline = in.HasInline
	f.inline = in.Inline
	f.windows = make(map[uint64][]block.Hash)
}

// committedLocked returns the committed content reference of block idx:
// its hash, or its inline bytes for an inline block 0.
func (f *file) committedLocked(ctx context.Context, idx uint64) (h block.Hash, inline []byte, isInline bool, err error) {
	if idx == 0 && f.hasInline {
		return block.Sum(f.inline), f.inline, true, nil
	}
	w := idx / recipeWindow
	hs, ok := f.windows[w]
	if !ok {
		r, err := f.c.api.GetRecipe(ctx, f.ino, w*recipeWindow, recipeWindow)
		if err != nil {
			return h, nil, false, fmt.Errorf("load recipe of inode %d: %w", f.ino, err)
		}
		f.learnCompsLocked(r.Composed)
		hs = r.Blocks
		f.windows[w] = hs
	}
	if i := idx % recipeWindow; i < uint64(len(hs)) {
		return hs[i], nil, false, nil
	}
	return h, nil, false, nil
}

// contentLocked returns the current content of block idx as this client sees
// it: a buffer (which the caller must not modify) or a hash to fetch.
func (f *file) contentLocked(ctx context.Context, idx uint64) (buf []byte, h block.Hash, err error) {
	if d, ok := f.dirty[idx]; ok {
		return d.buf, h, nil
	}
	if d, ok := f.inflight[idx]; ok {
		return d.buf, h, nil
	}
	if p, ok := f.pending[idx]; ok {
		f.noteCompLocked(p.h)
		return nil, p.h, nil
	}
	h, inline, isInline, err := f.committedLocked(ctx, idx)
	if isInline {
		return inline, block.Hash{}, err
	}
	f.noteCompLocked(h)
	return nil, h, err
}

// baseLocked returns what a new dirty block idx starts from: the base of
// the version being uploaded or waiting for its commit, or else the
// committed one; and, when content is set, a private, modifiable copy of
// the block's content as this client sees it (cut at its size).
func (f *file) baseLocked(ctx context.Context, idx uint64, content bool, at, end int64) ([]byte, base, int64, error) {
	if d, ok := f.inflight[idx]; ok {
		b := d.base
		b.sp = b.sp.clone()
		if !content {
			return nil, b, 0, nil
		}
		buf, shared := f.privateLocked(idx, d.buf, f.size-int64(idx)*f.bs, at, end)
		return buf, b, shared, nil
	}
	if p, ok := f.pending[idx]; ok {
		b := p.base
		b.sp = b.sp.clone()
		if !content {
			return nil, b, 0, nil
		}
		buf := f.tailContentLocked(idx, p.h)
		var fetched *blockBuf
		if buf == nil {
			var err error
			if fetched, err = f.fetchBaseLocked(ctx, idx, p.h); err != nil {
				return nil, b, 0, err
			}
			buf = fetched.data
		}
		buf, shared := f.privateLocked(idx, buf, f.size-int64(idx)*f.bs, at, end)
		doneWithBase(fetched, buf)
		return buf, b, shared, nil
	}
	if !content {
		// A whole-block write: the commit compares with what it finds.
		return nil, base{}, 0, nil
	}
	if int64(idx)*f.bs >= f.size {
		// Past the end as this client sees it: zeros, whatever another
		// client may have committed there since.
		return nil, base{oldSet: true}, 0, nil
	}
	h, inline, isInline, err := f.committedLocked(ctx, idx)
	if err != nil {
		return nil, base{}, 0, err
	}
	var buf []byte
	var fetched *blockBuf
	if isInline {
		buf = inline
	} else if buf = f.tailContentLocked(idx, h); buf == nil {
		if fetched, err = f.fetchBaseLocked(ctx, idx, h); err != nil {
			return nil, base{}, 0, err
		}
		buf = fetched.data
	}
	b := base{old: h, oldSet: true}
	if lim := f.size - int64(idx)*f.bs; int64(len(buf)) > lim {
		if !block.AllZero(buf[lim:]) {
			// The recipe was read after another client wrote past the
			// size this client knows: the base is not that block's
			// content, so no commit may find it unchanged. The redo
			// reapplies this client's ranges on the real content.
			b.old = staleBase()
		}
		buf = buf[:lim]
	}
	if isInline {
		return cloneRoom(buf, int64(len(buf)), f.bs, end), b, 0, nil
	}
	buf, shared := f.privateLocked(idx, buf, int64(len(buf)), at, end)
	doneWithBase(fetched, buf)
	return buf, b, shared, nil
}

// doneWithBase drops the reference to a write's fetched base b (nil: none
// was fetched) once the dirty block has buf: a copy, so b's buffer may go
// back to the fetch pool; or, should the dirty block have taken b's buffer
// itself (a cached version that is the block's tail, privateLocked), pinned
// so that it never does.
func doneWithBase(b *blockBuf, buf []byte) {
	if b == nil {
		return
	}
	if len(buf) > 0 && len(b.data) > 0 && unsafe.SliceData(buf) == unsafe.SliceData(b.data) {
		b.keep()
	}
	b.release()
}

// staleBase returns an Old hash no block has: a commit naming it conflicts.
func staleBase() block.Hash { return block.Hash{0: 0xff, 1: 0xff, 2: 0xff, 3: 0xff, 31: 0xff} }

// fetchLocked returns the content of block idx of hash h (a zero hash is a
// hole: nil); the caller must not modify it.
func (f *file) fetchLocked(ctx context.Context, idx uint64, h block.Hash) ([]byte, error) {
	if h.IsZero() {
		return nil, nil
	}
	f.noteCompLocked(h)
	buf, err := f.c.getBlock(ctx, h, true)
	if err != nil {
		return nil, fmt.Errorf("inode %d block %d: %w", f.ino, idx, err)
	}
	return buf, nil
}

// fetchBaseLocked returns the content of block idx of hash h (a zero hash
// is a hole: an empty buffer) for a write to start from, with a reference
// the caller releases once it copied the bytes. It is not put in the
// memory cache: the dirty block's copy holds it until its next version
// replaces it (newVersion), so a cached one only doubled what a writer
// holds (docs/design/2026-11-29-fsx-memory.md).
func (f *file) fetchBaseLocked(ctx context.Context, idx uint64, h block.Hash) (*blockBuf, error) {
	if h.IsZero() {
		return newBlockBuf(nil, false, nil), nil
	}
	f.noteCompLocked(h)
	b, err := f.c.getUncached(ctx, h)
	if err != nil {
		return nil, fmt.Errorf("inode %d block %d: %w", f.ino, idx, err)
	}
	return b, nil
}

// cloneBlock returns a copy of at most lim bytes of buf, with room to grow
// within a block of bs bytes (blockCap).
//
// The copy is not of the block's whole size: a small write into a block
// that is being uploaded or waits for its commit copies the block's bytes,
// and the copy is kept after its upload (the memory cache holds composed
// blocks). A copy of bs bytes for a short block (an SQLite WAL's or
// journal's first block, written a page at a time) held up to 64 times
// the block's bytes; the cache counted their length, so it held gigabytes
// within its bound.
func cloneBlock(buf []byte, lim, bs int64) []byte { return cloneRoom(buf, lim, bs, 0) }

// cloneRoom is cloneBlock with room for a write ending at end: a write
// past the copy's capacity allocated a second buffer at once (extend), and
// under fsx these regrowths were a quarter of everything tessera up
// allocated.
func cloneRoom(buf []byte, lim, bs, end int64) []byte {
	if int64(len(buf)) > lim {
		buf = buf[:max(lim, 0)]
	}
	out := make([]byte, len(buf), blockCap(max(int64(len(buf)), end), bs))
	copy(out, buf)
	return out
}

// blockCap is the capacity given to n bytes of a block of bs bytes: a
// quarter more (at least 64 KiB) for appends, at most the block.
func blockCap(n, bs int64) int64 {
	return max(n, min(bs, n+max(n/4, 64<<10)))
}

// write copies data into the file at off.
func (f *file) write(ctx context.Context, off int64, data []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.catchUpLocked(ctx); err != nil {
		return 0, err
	}
	if err := f.writeErrLocked(); err != nil {
		return 0, err
	}
	written := 0
	for len(data) > 0 {
		idx := uint64(off / f.bs)
		bo := off % f.bs
		n := min(int64(len(data)), f.bs-bo)
		d := f.dirty[idx]
		if d == nil {
			// Wait for budget without holding f.mu, so the flusher can
			// take it; then look again.
			f.mu.Unlock()
			err := f.c.budget.acquire(ctx, f.bs, f.c.makeRoom)
			f.mu.Lock()
			if err == nil {
				if err = f.writeErrLocked(); err != nil {
					f.c.budget.release(f.bs)
				}
			}
			if err != nil {
				return written, err
			}
			if d = f.dirty[idx]; d != nil {
				f.c.budget.release(f.bs)
			} else {
				d = &dblock{idx: idx}
				buf, b, shared, err := f.baseLocked(ctx, idx, !(bo == 0 && n == f.bs), bo, bo+n)
				if err != nil {
					f.c.budget.release(f.bs)
					return written, err
				}
				d.buf, d.base, d.baseLen, d.shared = buf, b, int64(len(buf)), shared
				if d.buf == nil {
					// Small files start small; a file that fills whole
					// blocks gets whole blocks at once, not by doubling.
					c := int64(firstCap(bo + n))
					if idx > 0 || bo+n >= 256<<10 {
						c = f.bs
					}
					d.buf = f.c.bufs.get(int(min(c, f.bs)))
				}
				f.dirty[idx] = d
			}
		}
		end := bo + n
		d.unshareLocked(bo, f.bs)
		if old := int64(len(d.buf)); end > old {
			if int64(cap(d.buf)) < end {
				d.shared = 0 // extend copies
			}
			d.buf = extend(d.buf, int(end), f.bs)
			if bo > old {
				clear(d.buf[old:bo]) // a gap: zeros; the rest is copied over
			}
		}
		copy(d.buf[bo:end], data[:n])
		d.sp.wrote(bo, end)
		d.own.wrote(bo, end)
		off += n
		data = data[n:]
		written += int(n)
		if off > f.size {
			f.size = off
		}
		if end == f.bs {
			f.scheduleLocked(d)
		}
	}
	now := time.Now()
	f.mtime = now.UnixNano()
	f.metaDirty = true
	if f.writes == 0 {
		f.firstWrite = now
	}
	f.writes++
	return written, nil
}

// firstCap is the capacity of a small file's first buffer, whose first
// write ends at end: the power of two at least end, from minFirstCap.
// Grown by doubling (extend) after. A source tree's files average 11 KB,
// written in tar's 10 KiB records: a 64 KiB floor allocated (and zeroed)
// 62 KB per untarred file, the daemon's largest allocation and a fifth of
// its CPU in garbage collection (issue 28).
func firstCap(end int64) int {
	c := minFirstCap
	for int64(c) < end {
		c <<= 1
	}
	return c
}

// minFirstCap is firstCap's floor: a page.
const minFirstCap = 4 << 10

// extend returns b with length n (> len(b)); the added bytes are not
// cleared when b's capacity suffices (the caller overwrites or clears them).
// A new buffer doubles the capacity, up to the block size bs.
func extend(b []byte, n int, bs int64) []byte {
	if n <= cap(b) {
		return b[:n]
	}
	nb := make([]byte, n, max(n, int(min(2*int64(cap(b)), bs))))
	copy(nb, b)
	return nb
}
