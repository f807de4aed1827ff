package client

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"tessera/internal/block"
	"tessera/internal/meta"
	"tessera/internal/placement"
)

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

// add queues j for block idx of ino, replacing that block's earlier job.
func (q *compactQueue) add(ino meta.Ino, idx uint64, j compactJob) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.init()
	k := [2]uint64{uint64(ino), idx}
	if old, ok := q.byBlock[k]; ok {
		delete(q.jobs, old)
	}
	q.byBlock[k] = j.h
	q.jobs[j.h] = j
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

// remove drops the job of block idx of ino (committed whole since).
func (q *compactQueue) remove(ino meta.Ino, idx uint64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	k := [2]uint64{uint64(ino), idx}
	if h, ok := q.byBlock[k]; ok {
		delete(q.jobs, h)
		delete(q.byBlock, k)
	}
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
		case now := <-t.C:
			for _, j := range c.compacts.due(now.Add(-after)) {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				if err := c.compact(ctx, j); err != nil {
					c.compactFailed.Log(c.log, slog.LevelWarn, "storing a composed block whole failed; it stays composed", "block", j.h.Short(), "err", err)
				}
				cancel()
			}
		}
	}
}

// compact uploads composed block j.h whole and drops its composition.
func (c *Client) compact(ctx context.Context, j compactJob) error {
	if _, ok := c.comps.get(j.h); !ok {
		return nil // stored whole already, or never composed here
	}
	data, err := c.getBlock(ctx, j.h, false)
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
	c.compacted.Add(1)
	return nil
}

