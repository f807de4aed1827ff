package client

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"tessera/internal/block"
	"tessera/internal/meta"
	"tessera/internal/policy"
)

// Handle is one open file description: reads and writes at offsets, with
// sequential-read detection for read-ahead. Every operation runs between
// the Pre and Post hooks of the file's consistency policy (internal/policy).
type Handle struct {
	f     *file
	flags int // open flags (O_SYNC, O_DSYNC, O_RSYNC, O_TRUNC...)
	mu    sync.Mutex
	// next is where a sequential reader's next read starts; run counts
	// consecutive sequential reads.
	next int64
	run  int
	// raEnd is the block index below which read-ahead was already asked
	// for in this sequential run.
	raEnd uint64
	// partial counts the bytes read of each block a reader is in (see
	// readAheadLocked).
	partial map[uint64]int64
	// fresh: the attributes were just read from the meta service by the
	// open, which is revalidation enough for the open's hooks.
	fresh bool
	// wrote: a write came through this handle (see Flush).
	wrote atomic.Bool
}

// Open opens the file whose current attributes are in (as Create returns
// them) with the open flags `flags`, running the policy's open hooks, and
// records the open with the meta service (HoldOpen). The mode says how the
// kernel may cache the file's pages (see OpenMode).
func (c *Client) Open(ctx context.Context, in meta.Inode, flags int) (*Handle, OpenMode, error) {
	mark := c.CallbackMark()
	if _, err := c.HoldOpen(readContext(ctx, c.PolicyFor(in.Policy), flags), in.Ino); err != nil {
		return nil, OpenMode{}, err
	}
	return c.OpenCreated(ctx, in, mark, flags)
}

// CallbackMark returns the position of the client's log of callbacks
// received. Take it before the create whose reply goes to OpenCreated.
func (c *Client) CallbackMark() uint64 { return c.called.mark() }

// OpenCreated is Open for an inode a create with meta.CreateReq.Open
// returned: the meta service recorded the open with the create. mark is
// CallbackMark taken before the create: a callback of the inode received
// since (another mount changed the file before this one had it open, and
// the change may have returned) means in may be older than what a read must
// see, and the file is read again before its first use.
func (c *Client) OpenCreated(ctx context.Context, in meta.Inode, mark uint64, flags int) (*Handle, OpenMode, error) {
	c.heldByCreate(in.Ino)
	f := c.ref(in.Ino)
	f.adopt(in, mark)
	return c.opened(ctx, f, in, flags)
}

// OpenNew is OpenCreated for an inode the create made (an exclusive
// create or O_TMPFILE, not a file it found): its recipe is known empty,
// so a write's first commit does not ask the meta service for it. The
// knowledge is window 0 of the cached recipe, which everything that may
// make it stale (a callback, another client's commit, an adopted newer
// state) drops as it drops any window.
func (c *Client) OpenNew(ctx context.Context, in meta.Inode, mark uint64, flags int) (*Handle, OpenMode, error) {
	c.heldByCreate(in.Ino)
	f := c.ref(in.Ino)
	f.mu.Lock()
	fresh := !f.loaded
	f.adoptLocked(in, mark)
	if fresh && !f.stale && !in.HasInline && in.Size == 0 {
		if _, ok := f.windows[0]; !ok {
			f.windows[0] = nil
		}
	}
	f.mu.Unlock()
	return c.opened(ctx, f, in, flags)
}

// OpenIno opens ino, counting the opener before it records the open with
// the meta service and reads the attributes (HoldOpen), under the file's
// lock, so that an unlink racing with the open either sees the opener
// (and defers the reap) or reaps first (and the open fails with ENOENT):
// an open never returns a handle on a reaped inode.
func (c *Client) OpenIno(ctx context.Context, ino meta.Ino, flags int) (*Handle, OpenMode, meta.Inode, error) {
	f := c.ref(ino)
	f.mu.Lock()
	mark := c.called.mark()
	// The policy is not known before the inode is read: the mount's
	// marks the call, and the meta service checks the inode's own before
	// it serves an open that lags (a site cut off from the majority).
	in, err := c.HoldOpen(readContext(ctx, c.PolicyFor(""), flags), ino)
	if err != nil {
		f.mu.Unlock()
		c.unref(f)
		return nil, OpenMode{}, in, err
	}
	f.adoptLocked(in, mark)
	f.mu.Unlock()
	h, mode, err := c.opened(ctx, f, in, flags)
	return h, mode, in, err
}

// opened runs the open hooks on a handle of f, whose attributes in were
// just read, and releases it (and its open with the meta service) if they
// fail.
func (c *Client) opened(ctx context.Context, f *file, in meta.Inode, flags int) (*Handle, OpenMode, error) {
	h := &Handle{f: f, flags: flags, fresh: true}
	p := c.PolicyFor(in.Policy)
	op := h.op(0, 0)
	err := p.PreOpen(ctx, handleFile{h}, op)
	if err == nil {
		err = p.PostOpen(ctx, handleFile{h}, op)
	}
	if err != nil {
		_ = h.Release(ctx)
		return nil, OpenMode{}, err
	}
	h.mu.Lock()
	h.fresh = false
	h.mu.Unlock()
	return h, c.openMode(in.Ino, in.Change, p.Knobs(), flags), nil
}

// ref returns the open-file state of ino, creating it, and counts one more
// opener.
func (c *Client) ref(ino meta.Ino) *file {
	c.mu.Lock()
	defer c.mu.Unlock()
	f := c.mu.files[ino]
	if f == nil {
		f = &file{c: c, ino: ino}
		c.mu.files[ino] = f
	}
	f.dropXattrsLocked() // close-to-open: another client may have changed them
	f.opens++
	return f
}

// unref drops an opener whose open failed.
func (c *Client) unref(f *file) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f.opens--
	if f.opens == 0 && c.mu.files[f.ino] == f {
		delete(c.mu.files, f.ino)
	}
}

// adopt loads in into f, or refreshes f from it; mark is the client's
// callback log position taken before in was read (see adoptLocked).
func (f *file) adopt(in meta.Inode, mark uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.adoptLocked(in, mark)
}

// adoptLocked loads in into f, or refreshes f from it. in was read after
// the callback log stood at mark: a callback of f's inode received since
// may have been sent after in was read (the reply can arrive after the
// callback was applied and acknowledged, and the writer that waited for
// that acknowledgement has returned). Then in may be older than the change
// called back, and f stays (or becomes) invalidated, so it is read again
// before its next use (catchUpLocked); the lease the callback ended is
// gone, so nothing else would correct it.
func (f *file) adoptLocked(in meta.Inode, mark uint64) {
	f.drainLocked()
	raced := f.c.called.since(f.ino, mark)
	if !f.loaded {
		f.loadLocked(in)
	} else {
		if f.stale && f.cleanLocked() && !raced {
			f.stale, f.change = false, 0 // in is fresh: adopt it
		}
		f.refreshLocked(in)
	}
	if raced {
		f.applyLocked(meta.Callback{Ino: f.ino, Kind: meta.CallbackInvalidate})
	}
}

// release drops one opener; the last one removes the state (after a commit)
// and reaps the inode if it was unlinked meanwhile.
func (c *Client) release(ctx context.Context, f *file) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	err := f.commitLocked(ctx)
	c.mu.Lock()
	f.opens--
	last := f.opens == 0
	c.mu.Unlock()
	if last && err == nil {
		c.compactAtClose(f.ino)
	}
	if last && err != nil && f.lost == nil {
		// The last descriptor is gone and its close was told the commit
		// failed: nobody is left to retry it, and data kept in memory
		// for nobody would hold the dirty budget for good (a full disk
		// would keep it forever). The file is as last committed.
		c.log.Error("close: uncommitted writes dropped after their commit failed", "inode", f.ino, "err", err)
		f.waitLocked(context.WithoutCancel(ctx))
		f.discardLocked()
	}
	c.mu.Lock()
	if last && f.opens == 0 && !f.unlinked && c.mu.files[f.ino] == f {
		delete(c.mu.files, f.ino)
	}
	c.mu.Unlock()
	if last && f.unlinked {
		c.reapLocked(ctx, f)
	}
	return err
}

// reapLocked reaps f's inode unless an opener arrived meanwhile, and drops
// f. f.mu is held, so an OpenIno of the inode waits (it reads the attributes
// under f.mu) and then finds the inode gone.
func (c *Client) reapLocked(ctx context.Context, f *file) {
	c.mu.Lock()
	busy := f.opens > 0
	c.mu.Unlock()
	if busy {
		return
	}
	if err := c.api.Reap(ctx, f.ino); err != nil {
		c.log.Warn("reap of unlinked inode failed", "inode", f.ino, "err", err)
	}
	c.mu.Lock()
	if f.opens == 0 && c.mu.files[f.ino] == f {
		delete(c.mu.files, f.ino)
	}
	c.mu.Unlock()
}

// Truncate sets the size of in.Ino, whether or not it is open.
// A write-once file (policy.Knobs.WriteOnce) with committed content cannot
// change size.
func (c *Client) Truncate(ctx context.Context, in meta.Inode, size int64) (meta.Inode, error) {
	f := c.ref(in.Ino)
	f.adopt(in, c.called.mark())
	f.mu.Lock()
	var err error
	if c.PolicyFor(f.policyName).Knobs().WriteOnce && f.committedSize > 0 && size != f.size {
		err = fmt.Errorf("truncate inode %d: %w", f.ino, policy.ErrImmutable)
	} else {
		err = f.truncateLocked(ctx, size)
	}
	f.mu.Unlock()
	if rerr := c.release(ctx, f); err == nil {
		err = rerr
	}
	if err != nil {
		return meta.Inode{}, err
	}
	return c.api.GetAttr(ctx, in.Ino)
}

// Write writes data at off, between the policy's write hooks (which may
// refuse it, or commit it at once).
func (h *Handle) Write(ctx context.Context, off int64, data []byte) (int, error) {
	p, hf, op := h.policy(), handleFile{h}, h.op(off, int64(len(data)))
	synced := p.Knobs().Commit == policy.CommitEachWrite || op.Flags&syscall.O_DSYNC != 0
	if synced {
		// The write is committed before it returns: no reader of this
		// client may see it before the commit made it visible everywhere.
		h.f.visible.Lock()
		defer h.f.visible.Unlock()
	}
	if err := p.PreWrite(ctx, hf, op); err != nil {
		return 0, err
	}
	h.wrote.Store(true)
	h.f.c.active.touch(time.Now())
	n, err := h.f.write(ctx, off, data)
	if err != nil {
		return n, err
	}
	if err := p.PostWrite(ctx, hf, op); err != nil {
		if synced {
			h.f.dropFailedWrite(ctx, err)
		}
		return 0, err
	}
	if k := p.Knobs(); k.Commit == policy.CommitPeriodic && k.CommitEvery > 0 && h.f.dirtyFor() >= k.CommitEvery {
		return n, h.commit(ctx, false)
	}
	return n, nil
}

// Flush commits what was written (close(2) of one descriptor), between the
// policy's close hooks.
func (h *Handle) Flush(ctx context.Context) error {
	p, hf, op := h.policy(), handleFile{h}, h.op(0, 0)
	if err := p.PreClose(ctx, hf, op); err != nil {
		return err
	}
	// A read-only descriptor that wrote nothing commits nothing on close:
	// a reader's close neither waits for a writer's uploads nor takes its
	// errors.
	if h.flags&syscall.O_ACCMODE != syscall.O_RDONLY || h.wrote.Load() {
		if err := h.commit(ctx, false); err != nil {
			return err
		}
	}
	return p.PostClose(ctx, hf, op)
}

// Fsync commits what was written and waits until every copy of every block
// uploaded since the last fsync was tried: all live replicas hold them
// (a copy that failed went to a server that is not live).
func (h *Handle) Fsync(ctx context.Context) error {
	p, hf, op := h.policy(), handleFile{h}, h.op(0, 0)
	if err := p.PreSync(ctx, hf, op); err != nil {
		return err
	}
	if err := h.commit(ctx, true); err != nil {
		return err
	}
	return p.PostSync(ctx, hf, op)
}

// commit commits what was written; with all (fsync, O_SYNC, O_DSYNC) it
// then waits until every copy of every block uploaded since the last such
// wait was tried, and until the meta service made every change it
// acknowledged durable (meta.API.Sync): this one, and those of closes and
// namespace operations before it, which survive a crash of the service but
// not yet of its machine.
func (h *Handle) commit(ctx context.Context, all bool) error {
	f := h.f
	f.mu.Lock()
	err := f.commitLocked(ctx)
	var repls []*replication
	if all {
		repls = f.repls
		f.repls = nil
	}
	f.mu.Unlock()
	if err != nil {
		return err
	}
	for _, rep := range repls {
		if err := rep.wait(ctx); err != nil {
			return fmt.Errorf("fsync inode %d: %w", f.ino, err)
		}
		if rep.err != nil {
			f.c.log.Warn("fsync: a block has fewer copies than asked; the mover will restore them", "inode", f.ino, "err", rep.err)
		}
	}
	if all {
		return f.c.Sync(ctx)
	}
	return nil
}

// Sync makes every change the meta service acknowledged to this client
// durable (fsync of a directory, or of a file with nothing to commit).
func (c *Client) Sync(ctx context.Context) error {
	if err := c.api.Sync(ctx); err != nil {
		return fmt.Errorf("sync: %w", err)
	}
	return nil
}

// Release closes the handle, committing what is left.
func (h *Handle) Release(ctx context.Context) error {
	c := h.f.c
	err := c.release(ctx, h.f)
	if rerr := c.ReleaseOpen(ctx, h.f.ino); rerr != nil {
		// The meta service keeps the inode until the session ends.
		c.log.Warn("close: telling the meta service failed", "inode", h.f.ino, "err", rerr)
	}
	return err
}

// Size returns the file size as this client sees it.
func (h *Handle) Size() int64 {
	h.f.mu.Lock()
	defer h.f.mu.Unlock()
	h.f.drainLocked()
	return h.f.size
}

// ExpectSize says the file will be size bytes once written (an S3 PUT
// knows its body's length): the block it ends in gets a buffer of that
// end, not of a whole block (a 1 MiB object in 4 MiB blocks allocated and
// cleared 4 MiB). Only a hint: a write past it grows the buffer.
func (h *Handle) ExpectSize(size int64) {
	h.f.mu.Lock()
	defer h.f.mu.Unlock()
	h.f.expect = max(size, 0)
}

// Committed returns the inode as this client's latest commit of the file
// left it (the meta service's reply), and false before any commit.
func (h *Handle) Committed() (meta.Inode, bool) {
	h.f.mu.Lock()
	defer h.f.mu.Unlock()
	return h.f.committed, h.f.committed.Ino != 0
}

// fetchJob is one block a read needs from the caches or the block servers.
type fetchJob struct {
	h    block.Hash
	dst  []byte // where the bytes go
	from int64  // offset inside the block
}

// Read reads into dest from off and returns the byte count; 0 at or past
// the end of the file. It runs between the policy's read hooks, which
// revalidate first for synchronized reads (O_RSYNC).
func (h *Handle) Read(ctx context.Context, off int64, dest []byte) (int, error) {
	h.f.c.active.touch(time.Now())
	p, hf, op := h.policy(), handleFile{h}, h.op(off, int64(len(dest)))
	ctx = readContext(ctx, p, op.Flags)
	if k := p.Knobs(); k.Commit == policy.CommitEachWrite || k.Reads == policy.ReadSynchronized || op.Flags&syscall.O_RSYNC == syscall.O_RSYNC {
		h.f.visible.RLock()
		defer h.f.visible.RUnlock()
	}
	if err := p.PreRead(ctx, hf, op); err != nil {
		return 0, err
	}
	n, err := h.read(ctx, off, dest)
	if err != nil {
		return n, err
	}
	return n, p.PostRead(ctx, hf, op)
}

func (h *Handle) read(ctx context.Context, off int64, dest []byte) (int, error) {
	f := h.f
	f.mu.Lock()
	if err := f.catchUpLocked(ctx); err != nil {
		f.mu.Unlock()
		return 0, err
	}
	if off >= f.size {
		f.mu.Unlock()
		return 0, nil
	}
	n := min(int64(len(dest)), f.size-off)
	dest = dest[:n]
	var spare [2]fetchJob // a read spans one or two blocks, mostly
	jobs := spare[:0]
	for pos := int64(0); pos < n; {
		idx := uint64((off + pos) / f.bs)
		bo := (off + pos) % f.bs
		m := min(n-pos, f.bs-bo)
		dst := dest[pos : pos+m]
		buf, bh, err := f.contentLocked(ctx, idx)
		if err != nil {
			f.mu.Unlock()
			return 0, err
		}
		switch {
		case buf != nil || bh.IsZero():
			copyBlock(dst, buf, bo)
		default:
			jobs = append(jobs, fetchJob{h: bh, dst: dst, from: bo})
		}
		pos += m
	}
	ahead, done := h.readAheadLocked(ctx, off, n)
	f.mu.Unlock()

	// Read-ahead starts with the reader's own fetches, not after them; the
	// reader's go first on each server's lane (fetchSlots).
	for _, a := range ahead {
		f.c.prefetch(a)
	}
	if err := h.fetch(ctx, jobs); err != nil {
		return 0, err
	}
	for _, d := range done {
		f.c.mem.demote(d)
	}
	return int(n), nil
}

// fetch runs jobs in parallel.
func (h *Handle) fetch(ctx context.Context, jobs []fetchJob) error {
	if len(jobs) == 1 {
		j := jobs[0]
		if err := h.f.c.readRange(ctx, j.h, j.from, j.dst); err != nil {
			return fmt.Errorf("read inode %d: %w", h.f.ino, err)
		}
		return nil
	}
	errs := make(chan error, len(jobs))
	for _, j := range jobs {
		go func() { errs <- h.f.c.readRange(ctx, j.h, j.from, j.dst) }()
	}
	var first error
	for range jobs {
		if err := <-errs; err != nil && first == nil {
			first = fmt.Errorf("read inode %d: %w", h.f.ino, err)
		}
	}
	return first
}

// copyBlock copies block content from offset `from` into dst; bytes past the
// end of the stored content are zeros.
func copyBlock(dst, content []byte, from int64) {
	k := 0
	if from < int64(len(content)) {
		k = copy(dst, content[from:])
	}
	clear(dst[k:])
}

// readAheadLocked tracks sequential access and returns the hashes of the
// blocks worth fetching ahead of the reader, and the blocks the reader has
// now read every byte of: they go first when the memory cache makes room,
// so that a deep read-ahead is not evicted by the blocks behind the reader
// before it is read. (Counting bytes rather than watching for a read that
// ends a block matters: the kernel sends a sequential reader's reads several
// at a time and they arrive out of order, so the end of a block may come
// before its middle, and a block demoted then was evicted and fetched again
// for the late read, at the back of the server's queue.) A first read at
// offset 0 starts a short read-ahead (a block per server), the second
// sequential read the full depth.
func (h *Handle) readAheadLocked(ctx context.Context, off, n int64) (ahead, done []block.Hash) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if off == h.next {
		h.run++
	} else {
		h.run, h.raEnd = 0, 0
	}
	h.next = off + n
	f := h.f
	done = h.countReadLocked(ctx, off, n)
	first := uint64((off + n + f.bs - 1) / f.bs)
	depth := f.c.readAheadBlocks(f.bs)
	switch {
	case h.run >= 2:
	case h.run == 1 && off == 0:
		depth = min(depth, max(f.c.router.upServers(), 2))
	default:
		return nil, done
	}
	var out []block.Hash
	end := first + uint64(depth)
	// Blocks asked for already are in the cache, in flight or in the
	// kernel's page cache: a run asks for each block once, not once per
	// read of the blocks before it.
	from := max(first, h.raEnd)
	h.raEnd = max(h.raEnd, end)
	for idx := from; idx < end && int64(idx)*f.bs < f.size; idx++ {
		buf, bh, err := f.contentLocked(ctx, idx)
		if err != nil || buf != nil || bh.IsZero() {
			continue
		}
		out = append(out, bh)
	}
	return out, done
}

// maxPartialBlocks bounds the blocks a handle counts read bytes of; a
// reader touching more at once is not sequential, and the count restarts.
const maxPartialBlocks = 64

// countReadLocked adds the read of n bytes at off to the per-block counts
// and returns the blocks now read to the last byte.
func (h *Handle) countReadLocked(ctx context.Context, off, n int64) (full []block.Hash) {
	f := h.f
	if h.partial == nil || len(h.partial) > maxPartialBlocks {
		h.partial = make(map[uint64]int64)
	}
	for pos := off; pos < off+n; {
		idx := uint64(pos / f.bs)
		end := min(int64(idx+1)*f.bs, off+n)
		h.partial[idx] += end - pos
		pos = end
		if h.partial[idx] < min(f.bs, f.size-int64(idx)*f.bs) {
			continue
		}
		delete(h.partial, idx)
		if _, bh, err := f.contentLocked(ctx, idx); err == nil && !bh.IsZero() {
			full = append(full, bh)
		}
	}
	return full
}
