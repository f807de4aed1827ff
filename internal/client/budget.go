package client

import (
	"context"
	"sync"
)

// budget bounds the bytes of dirty blocks a client buffers. A writer that
// would exceed it asks the client to upload dirty blocks (starved) and waits
// for uploads to release budget.
type budget struct {
	max int64
	mu  sync.Mutex
	cnd *sync.Cond
	use int64
}

func newBudget(max int64) *budget {
	b := &budget{max: max}
	b.cnd = sync.NewCond(&b.mu)
	return b
}

// acquire takes n bytes, waiting while the budget is spent. starved is called
// (without the lock) before each wait; when it reports that nothing is under
// way that could free budget, acquire overshoots rather than wait forever.
// The wait ends, taking nothing, when ctx is cancelled or interrupted
// (interrupt.go).
func (b *budget) acquire(ctx context.Context, n int64, starved func() int) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	var stop func()
	defer func() {
		if stop != nil {
			stop()
		}
	}()
	for b.use > 0 && b.use+n > b.max {
		b.mu.Unlock()
		busy := starved()
		b.mu.Lock()
		if busy == 0 {
			break
		}
		if err := interrupted(ctx); err != nil {
			return err
		}
		if stop == nil {
			stop = onInterrupt(ctx, func() {
				b.mu.Lock()
				b.cnd.Broadcast()
				b.mu.Unlock()
			})
		}
		if b.use > 0 && b.use+n > b.max {
			b.cnd.Wait()
		}
	}
	b.use += n
	return nil
}

// force takes n bytes without waiting.
func (b *budget) force(n int64) {
	b.mu.Lock()
	b.use += n
	b.mu.Unlock()
}

func (b *budget) release(n int64) {
	b.mu.Lock()
	b.use -= n
	b.mu.Unlock()
	b.cnd.Broadcast()
}

func (b *budget) inUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.use
}
