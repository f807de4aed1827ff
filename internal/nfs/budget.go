package nfs

import (
	"context"
	"sync"
)

// DefaultInFlight bounds the bytes of the calls all connections have in
// flight (Config.MaxInFlight): a record read and the READ reply it asks
// for, held from the read of the record until its reply is written.
const DefaultInFlight = 64 << 20

// budget is a count of bytes callers take and give back; a caller waits
// while taking more would go past the limit (one larger than the limit
// waits until nothing else is held).
type budget struct {
	mu    sync.Mutex
	cond  *sync.Cond
	limit int64
	held  int64
}

func newBudget(limit int64) *budget {
	b := &budget{limit: limit}
	b.cond = sync.NewCond(&b.mu)
	return b
}

// take waits for n bytes, or until ctx ends (then it takes nothing).
func (b *budget) take(ctx context.Context, n int64) error {
	stop := context.AfterFunc(ctx, func() {
		b.mu.Lock()
		b.cond.Broadcast()
		b.mu.Unlock()
	})
	defer stop()
	b.mu.Lock()
	defer b.mu.Unlock()
	for b.held > 0 && b.held+n > b.limit {
		if err := ctx.Err(); err != nil {
			return err
		}
		b.cond.Wait()
	}
	b.held += n
	return nil
}

func (b *budget) give(n int64) {
	b.mu.Lock()
	b.held -= n
	b.cond.Broadcast()
	b.mu.Unlock()
}
