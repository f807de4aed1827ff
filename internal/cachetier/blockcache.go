package cachetier

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"tessera/internal/block"
)

var _ block.Store = (*BlockCache)(nil)

// BlockCache is a block.Store that looks blocks up in a Pool before its
// next store, and fills the pool with what it had to fetch from next.
//
// Get: the tier (verified; any problem is a miss), then next; a block got
// from next is queued for an asynchronous fill (bounded queue, dropped when
// full, deduplicated by hash). Errors come only from next: the tier never
// turns a Get into an error. Put passes through to next (and queues a fill
// if FillOnPut). Has passes through.
//
// Its fill workers run until Close.
type BlockCache struct {
	pool      *Pool
	next      block.Store
	fillOnPut bool
	maxItems  int
	maxBytes  int64

	queue  chan fill       // capacity maxItems; sends never block (see Fill)
	ctx    context.Context // the workers' context, cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// mu guards the queue's accounting; nothing nests inside it.
	mu struct {
		sync.Mutex
		queued  map[block.Hash]struct{} // queued or being filled
		bytes   int64
		waiters []chan struct{} // Drain calls waiting for an empty queue
		closed  bool
	}

	stats struct {
		hits, misses, corrupt, errors, fills, dropped atomic.Uint64
	}
}

type fill struct {
	h    block.Hash
	data []byte
}

// Option tunes a BlockCache.
type Option func(*BlockCache)

// FillOnPut makes Put also fill the tier (after next accepted the block)
// [off: blocks just written are often not read back soon, and the writer
// has them in its own cache].
func FillOnPut(on bool) Option { return func(c *BlockCache) { c.fillOnPut = on } }

// FillQueue bounds the fills waiting for a worker, by count and by bytes
// [64 fills, 64 MiB].
func FillQueue(items int, bytes int64) Option {
	return func(c *BlockCache) {
		if items > 0 {
			c.maxItems = items
		}
		if bytes > 0 {
			c.maxBytes = bytes
		}
	}
}

// fillWorkers is the number of goroutines storing fills: fills are I/O
// bound and one connection each; two overlap one's round trips with the
// other's copying.
const fillWorkers = 2

// NewBlockCache returns a BlockCache over next, using pool. Close it to
// stop its fill workers; it does not close pool or next.
func NewBlockCache(pool *Pool, next block.Store, opts ...Option) *BlockCache {
	c := &BlockCache{pool: pool, next: next, maxItems: 64, maxBytes: 64 << 20}
	for _, o := range opts {
		o(c)
	}
	c.queue = make(chan fill, c.maxItems)
	c.mu.queued = map[block.Hash]struct{}{}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	for range fillWorkers {
		c.wg.Go(c.worker)
	}
	return c
}

// Close stops the fill workers, dropping the fills still queued. Get, Put
// and Has keep working (without fills).
func (c *BlockCache) Close() error {
	c.mu.Lock()
	c.mu.closed = true
	waiters := c.mu.waiters
	c.mu.waiters = nil
	c.mu.Unlock()
	c.cancel()
	c.wg.Wait()
	for _, w := range waiters {
		close(w)
	}
	return nil
}

// Get returns block h: from the tier if it holds it, else from next (and
// then queues a fill).
func (c *BlockCache) Get(ctx context.Context, h block.Hash) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if h.IsZero() {
		return c.next.Get(ctx, h)
	}
	if data, ok := c.Lookup(ctx, h); ok {
		return data, nil
	}
	data, err := c.next.Get(ctx, h)
	if err != nil {
		return nil, err
	}
	c.Fill(h, data)
	return data, nil
}

// Put stores the block in next (and queues a fill if FillOnPut).
func (c *BlockCache) Put(ctx context.Context, h block.Hash, data []byte) error {
	if err := c.next.Put(ctx, h, data); err != nil {
		return err
	}
	if c.fillOnPut && !h.IsZero() {
		c.Fill(h, data)
	}
	return nil
}

// Has asks next.
func (c *BlockCache) Has(ctx context.Context, hs []block.Hash) ([]bool, error) {
	return c.next.Has(ctx, hs)
}

// Lookup returns block h from the tier only, verified; false on a miss for
// whatever reason (the reason goes to the counters).
func (c *BlockCache) Lookup(ctx context.Context, h block.Hash) ([]byte, bool) {
	data, err := c.pool.getBlock(ctx, h)
	switch {
	case err == nil:
		c.stats.hits.Add(1)
		return data, true
	case errors.Is(err, block.ErrCorrupt):
		c.stats.corrupt.Add(1)
	case errors.Is(err, errMiss), errors.Is(err, ErrServerDown), ctx.Err() != nil:
	default:
		c.stats.errors.Add(1)
	}
	c.stats.misses.Add(1)
	return nil, false
}

// Fill queues data to be stored in the tier as block h, copying it (the
// caller keeps data). It reports whether the fill was queued: it is
// dropped when the queue is full, when h is already queued, when h's
// server is down, or after Close. Data is trusted to match h; readers
// verify.
func (c *BlockCache) Fill(h block.Hash, data []byte) bool {
	if len(data) > MaxBlockSize || !c.pool.blockServerUp(h) {
		c.stats.dropped.Add(1)
		return false
	}
	c.mu.Lock()
	if _, dup := c.mu.queued[h]; dup {
		c.mu.Unlock()
		return false
	}
	if c.mu.closed || len(c.mu.queued) >= c.maxItems || c.mu.bytes+int64(len(data)) > c.maxBytes {
		c.mu.Unlock()
		c.stats.dropped.Add(1)
		return false
	}
	// Reserve the slot: len(queued) <= cap(queue), so the send below never
	// blocks.
	c.mu.queued[h] = struct{}{}
	c.mu.bytes += int64(len(data))
	c.mu.Unlock()
	c.queue <- fill{h: h, data: bytes.Clone(data)}
	return true
}

// Drain waits until every queued fill is done (or dropped by Close), or
// ctx ends.
func (c *BlockCache) Drain(ctx context.Context) error {
	c.mu.Lock()
	if len(c.mu.queued) == 0 || c.mu.closed {
		c.mu.Unlock()
		return nil
	}
	w := make(chan struct{})
	c.mu.waiters = append(c.mu.waiters, w)
	c.mu.Unlock()
	select {
	case <-w:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *BlockCache) worker() {
	for {
		select {
		case <-c.ctx.Done():
			return
		case f := <-c.queue:
			err := c.pool.SetBlock(c.ctx, f.h, f.data)
			switch {
			case err == nil:
				c.stats.fills.Add(1)
			case errors.Is(err, ErrServerDown), c.ctx.Err() != nil:
				c.stats.dropped.Add(1)
			default:
				c.stats.errors.Add(1)
			}
			c.done(f)
		}
	}
}

// done releases f's reservation and wakes Drain calls if the queue is empty.
func (c *BlockCache) done(f fill) {
	c.mu.Lock()
	delete(c.mu.queued, f.h)
	c.mu.bytes -= int64(len(f.data))
	var waiters []chan struct{}
	if len(c.mu.queued) == 0 {
		waiters, c.mu.waiters = c.mu.waiters, nil
	}
	c.mu.Unlock()
	for _, w := range waiters {
		close(w)
	}
}

// Stats are a BlockCache's counters, for `tessera status`.
type Stats struct {
	Hits    uint64 // Gets and Lookups served by the tier
	Misses  uint64 // … not served (all reasons, including Corrupt)
	Corrupt uint64 // misses on items that failed verification
	Errors  uint64 // tier operations that failed (connection, server)
	Fills   uint64 // blocks stored in the tier
	Dropped uint64 // fills dropped (queue full, server down, closing)
}

// Stats returns the counters.
func (c *BlockCache) Stats() Stats {
	return Stats{
		Hits: c.stats.hits.Load(), Misses: c.stats.misses.Load(), Corrupt: c.stats.corrupt.Load(),
		Errors: c.stats.errors.Load(), Fills: c.stats.fills.Load(), Dropped: c.stats.dropped.Load(),
	}
}
