package client

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"tessera/internal/block"
	"tessera/internal/meta"
	"tessera/internal/placement"
)

// Compaction and memory: nothing compaction reads stays in the memory
// cache. It reads the block from the version this client kept there for
// the next small write when it still is (putKept), and drops that version
// once the block is stored whole: the writer has rested, and the share of
// kept versions (memCache.keptMax) is for blocks still changing. Otherwise
// it assembles the block from pieces it fetches for itself (getOnce), which
// the cache never sees: under an untar with a policy that commits each
// write, compaction's bases, patches and assembled blocks, which nobody
// reads again, filled the cache and its fetch buffers
// (docs/design/2026-11-29-compaction-memory.md).

// DefaultCompactAfter is Config.CompactAfter's default.
const DefaultCompactAfter = 5 * time.Second

// compactJob is a composed block this client committed.
type compactJob struct {
	h        block.Hash
	replicas placement.Spec
	at       time.Time
}

// compactQueue holds the composed blocks waiting to be stored whole: those
// this client committed, by file and block index (a newer commit of the
// same block replaces the job), and those it assembled to read.
type compactQueue struct {
	mu      sync.Mutex
	jobs    map[block.Hash]compactJob
	byBlock map[[2]uint64]block.Hash
}

func (q *compactQueue) init() {
	if q.jobs == nil {
		q.jobs = make(map[block.Hash]compactJob)
		q.byBlock = make(map[[2]uint64]block.Hash)
	}
}

// add queues j for block idx of ino, replacing that block's earlier job,
// whose hash it returns (zero if none).
func (q *compactQueue) add(ino meta.Ino, idx uint64, j compactJob) (old block.Hash) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.init()
	k := [2]uint64{uint64(ino), idx}
	if h, ok := q.byBlock[k]; ok {
		delete(q.jobs, h)
		old = h
	}
	q.byBlock[k] = j.h
	q.jobs[j.h] = j
	return old
}

// addRead queues composed block j.h, assembled by a reader, unless queued.
func (q *compactQueue) addRead(j compactJob) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.init()
	if _, ok := q.jobs[j.h]; !ok {
		q.jobs[j.h] = j
	}
}

// remove drops the job of block idx of ino (committed whole since) and
// returns its hash (zero if none).
func (q *compactQueue) remove(ino meta.Ino, idx uint64) (old block.Hash) {
	q.mu.Lock()
	defer q.mu.Unlock()
	k := [2]uint64{uint64(ino), idx}
	if h, ok := q.byBlock[k]; ok {
		delete(q.jobs, h)
		delete(q.byBlock, k)
		old = h
	}
	return old
}

// superseded forgets, in the client-wide cache of compositions, the
// composed version old of a block a commit replaced by new: nothing
// compacts it any more, and a reader of this client reads the block
// through its file, which re-adds what it needs (noteCompLocked). Under a
// policy that commits each write, every append to a file past
// meta.InlineMax left one composition there, with all the patches before
// it: 4.5 MB of an untar's live heap.
// (The same content composed in another file keeps its composition while
// its job is queued.)
func (c *Client) superseded(old, new block.Hash) {
	if !old.IsZero() && old != new && !c.compacts.queued(old) {
		c.comps.drop(old)
	}
}

// queued reports whether a job for h is queued.
func (q *compactQueue) queued(h block.Hash) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	_, ok := q.jobs[h]
	return ok
}

// hurry makes the queued jobs of ino's blocks for which worth holds due at
// once, and reports whether there was one.
func (q *compactQueue) hurry(ino meta.Ino, worth func(block.Hash) bool) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	found := false
	for k, h := range q.byBlock {
		if j, ok := q.jobs[h]; ok && k[0] == uint64(ino) && worth(h) {
			j.at = time.Time{}
			q.jobs[h] = j
			found = true
		}
	}
	return found
}

// due takes the jobs queued before cutoff.
func (q *compactQueue) due(cutoff time.Time) []compactJob {
	q.mu.Lock()
	defer q.mu.Unlock()
	var out []compactJob
	for h, j := range q.jobs {
		if j.at.Before(cutoff) {
			out = append(out, j)
			delete(q.jobs, h)
		}
	}
	for k, h := range q.byBlock {
		if _, ok := q.jobs[h]; !ok {
			delete(q.byBlock, k)
		}
	}
	return out
}

// compactLoop stores composed blocks whole once they rest (see above),
// until stop is closed.
func (c *Client) compactLoop(after time.Duration, stop <-chan struct{}) {
	t := time.NewTicker(min(max(after/4, 50*time.Millisecond), time.Second))
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		case <-c.compactNow: // compactAtClose
		}
		for _, j := range c.compacts.due(time.Now().Add(-after)) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			if err := c.compact(ctx, j); err != nil {
				c.compactFailed.Log(c.log, slog.LevelWarn, "storing a composed block whole failed; it stays composed", "block", j.h.Short(), "err", err)
			}
			cancel()
		}
	}
}

// compactAtClose makes the composed blocks of ino, whose last opener in
// this client just closed it, due for compaction now rather than after
// CompactAfter, when a quarter of what they hold or more was written since
// they were last stored whole (an untar's file, written in appends): their
// kept versions are then still in memory, and go once stored (see above).
// Compaction after CompactAfter would send the same bytes unless the file
// changed again meanwhile; the quarter bounds what a file changed at each
// of many short opens (a log) sends: at most four times what was written
// since the block was last stored whole. A block with smaller changes
// waits as before.
func (c *Client) compactAtClose(ino meta.Ino) {
	if c.cfg.CompactAfter <= 0 {
		return
	}
	worth := func(h block.Hash) bool {
		comp, ok := c.comps.get(h)
		if !ok {
			return false
		}
		var n int64
		for _, p := range comp.Patches {
			n += int64(p.Len)
		}
		return 4*n >= int64(comp.Len)
	}
	if c.compacts.hurry(ino, worth) {
		select {
		case c.compactNow <- struct{}{}:
		default:
		}
	}
}

// compact uploads composed block j.h whole and drops its composition.
func (c *Client) compact(ctx context.Context, j compactJob) error {
	if _, ok := c.comps.get(j.h); !ok {
		return nil // stored whole already, or never composed here
	}
	data, err := c.getOnce(ctx, j.h)
	if err != nil {
		return err
	}
	if _, rep, err := c.upload(ctx, data, j.replicas); err != nil {
		return err
	} else if rep != nil {
		if err := rep.wait(ctx); err != nil {
			return err
		}
	}
	if err := c.api.Decompose(ctx, j.h); err != nil {
		return err
	}
	c.comps.drop(j.h)
	c.forgetComposition(j.h)
	c.mem.dropKept(j.h)
	c.compacted.Add(1)
	return nil
}

// forgetComposition makes every open file forget h's composition once h
// is stored whole and its pieces released: a small write on h must build on
// h itself, not on the pieces the reclaimer is about to remove (a file
// kept open across a compaction committed compositions over removed
// pieces, its fsync reporting success: TestWriteAfterCompactionKeepsData).
func (c *Client) forgetComposition(h block.Hash) {
	c.mu.Lock()
	files := make([]*file, 0, len(c.mu.files))
	for _, f := range c.mu.files {
		files = append(files, f)
	}
	c.mu.Unlock()
	for _, f := range files {
		f.mu.Lock()
		delete(f.comps, h)
		f.mu.Unlock()
	}
}

// getUncached is getOnce returning the block with a reference the caller
// must release once done with its bytes: a fetched buffer then goes back
// to the fetch pool instead of becoming garbage.
func (c *Client) getUncached(ctx context.Context, h block.Hash) (*blockBuf, error) {
	if b := c.mem.get(h); b != nil {
		return b, nil
	}
	if comp, ok := c.comps.get(h); ok {
		data, err := c.assemble(ctx, h, comp, c.getOnce)
		if err == nil {
			return newBlockBuf(data, false, nil), nil
		}
		if !errors.Is(err, block.ErrNotFound) {
			return nil, err
		}
		c.comps.drop(h) // stored whole since, and its pieces reclaimed
	}
	c.fetches <- struct{}{}
	defer func() { <-c.fetches }()
	return c.fetch(ctx, h)
}

// getOnce returns block h for compaction: from the memory cache if it
// holds it, otherwise fetched (a composed block assembled from pieces
// fetched so too) without keeping it in the cache or sharing the fetch
// with readers. The caller may keep the bytes.
func (c *Client) getOnce(ctx context.Context, h block.Hash) ([]byte, error) {
	b, err := c.getUncached(ctx, h)
	if err != nil {
		return nil, err
	}
	data := b.keep()
	b.release()
	return data, nil
}
