package client

import (
	"context"
	"fmt"
	"sync"

	"tessera/internal/block"
	"tessera/internal/meta"
)

// Handle is one open file description: reads and writes at offsets, with
// sequential-read detection for read-ahead.
type Handle struct {
	f  *file
	mu sync.Mutex
	// next is where a sequential reader's next read starts; run counts
	// consecutive sequential reads.
	next int64
	run  int
}

// Open opens the file whose current attributes are in (as Create returns
// them). keepCache reports whether the kernel may keep the pages it cached
// from an earlier open: the content has not changed since this client last
// saw it.
func (c *Client) Open(ctx context.Context, in meta.Inode) (h *Handle, keepCache bool) {
	f := c.ref(in.Ino)
	f.adopt(in)
	return &Handle{f: f}, c.keepCache(in)
}

// OpenIno opens ino, counting the opener before it reads the attributes
// under the file's lock, so that an unlink racing with the open either sees
// the opener (and defers the reap) or reaps first (and the open fails with
// ENOENT): an open never returns a handle on a reaped inode.
func (c *Client) OpenIno(ctx context.Context, ino meta.Ino) (h *Handle, keepCache bool, in meta.Inode, err error) {
	f := c.ref(ino)
	f.mu.Lock()
	in, err = c.api.GetAttr(ctx, ino)
	if err != nil {
		f.mu.Unlock()
		c.unref(f)
		return nil, false, in, err
	}
	f.adoptLocked(in)
	f.mu.Unlock()
	return &Handle{f: f}, c.keepCache(in), in, nil
}

func (c *Client) keepCache(in meta.Inode) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	keep := c.mu.seen[in.Ino] == in.Change && in.Change != 0
	c.mu.seen[in.Ino] = in.Change
	return keep
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

// adopt loads in into f, or refreshes f from it.
func (f *file) adopt(in meta.Inode) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.adoptLocked(in)
}

func (f *file) adoptLocked(in meta.Inode) {
	if !f.loaded {
		f.loadLocked(in)
	} else {
		f.refreshLocked(in)
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
	if last && err == nil && !f.unlinked {
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
func (c *Client) Truncate(ctx context.Context, in meta.Inode, size int64) (meta.Inode, error) {
	f := c.ref(in.Ino)
	f.adopt(in)
	f.mu.Lock()
	err := f.truncateLocked(ctx, size)
	f.mu.Unlock()
	if rerr := c.release(ctx, f); err == nil {
		err = rerr
	}
	if err != nil {
		return meta.Inode{}, err
	}
	return c.api.GetAttr(ctx, in.Ino)
}

// Write writes data at off.
func (h *Handle) Write(ctx context.Context, off int64, data []byte) (int, error) {
	return h.f.write(ctx, off, data)
}

// Flush commits what was written (close, fsync).
func (h *Handle) Flush(ctx context.Context) error {
	h.f.mu.Lock()
	defer h.f.mu.Unlock()
	return h.f.commitLocked(ctx)
}

// Fsync commits what was written and waits until every copy of every block
// uploaded since the last fsync was tried: all live replicas hold them
// (a copy that failed went to a server that is not live).
func (h *Handle) Fsync(ctx context.Context) error {
	f := h.f
	f.mu.Lock()
	err := f.commitLocked(ctx)
	repls := f.repls
	f.repls = nil
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
	return nil
}

// Release closes the handle, committing what is left.
func (h *Handle) Release(ctx context.Context) error {
	return h.f.c.release(ctx, h.f)
}

// Size returns the file size as this client sees it.
func (h *Handle) Size() int64 {
	h.f.mu.Lock()
	defer h.f.mu.Unlock()
	return h.f.size
}

// fetchJob is one block a read needs from the caches or the block servers.
type fetchJob struct {
	h    block.Hash
	dst  []byte // where the bytes go
	from int64  // offset inside the block
}

// Read reads into dest from off and returns the byte count; 0 at or past
// the end of the file.
func (h *Handle) Read(ctx context.Context, off int64, dest []byte) (int, error) {
	f := h.f
	f.mu.Lock()
	if off >= f.size {
		f.mu.Unlock()
		return 0, nil
	}
	n := min(int64(len(dest)), f.size-off)
	dest = dest[:n]
	var jobs []fetchJob
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

	if err := h.fetch(ctx, jobs); err != nil {
		return 0, err
	}
	if !done.IsZero() {
		f.c.mem.demote(done)
	}
	for _, a := range ahead {
		f.c.prefetch(a)
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
// blocks worth fetching ahead of the reader, and the block a reader has
// just read to its end (zero if none): it goes first when the
// memory cache makes room, so that a deep read-ahead is not evicted by the
// blocks behind the reader before it is read.
func (h *Handle) readAheadLocked(ctx context.Context, off, n int64) (ahead []block.Hash, done block.Hash) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if off == h.next {
		h.run++
	} else {
		h.run = 0
	}
	h.next = off + n
	f := h.f
	first := uint64((off+n)/f.bs) + 1
	if (off+n)%f.bs == 0 {
		// Demoted even when the kernel's concurrent reads arrive out of
		// order and break the run: a re-read is served by its page cache.
		first--
		if _, bh, err := f.contentLocked(ctx, first-1); err == nil {
			done = bh
		}
	}
	if h.run < 2 {
		return nil, done
	}
	var out []block.Hash
	for idx := first; idx < first+uint64(f.c.readAheadBlocks(f.bs)) && int64(idx)*f.bs < f.size; idx++ {
		buf, bh, err := f.contentLocked(ctx, idx)
		if err != nil || buf != nil || bh.IsZero() {
			continue
		}
		out = append(out, bh)
	}
	return out, done
}
