package mover

import (
	"context"
	"sync"
	"tessera/internal/clock"
	"time"
)

// bucket is a token bucket of bytes: rate per second, at most burst saved
// up. A take larger than what is saved goes into debt and waits it out, so
// blocks larger than the burst still pass, at the rate.
type bucket struct {
	rate, burst float64
	now         func() time.Time
	sleep       func(ctx context.Context, d time.Duration) error

	// mu guards tokens and last.
	mu     sync.Mutex
	tokens float64
	last   time.Time
}

// newBucket returns a full bucket; rate <= 0 means unlimited (nil).
func newBucket(rate int64, now func() time.Time, sleep func(context.Context, time.Duration) error) *bucket {
	if rate <= 0 {
		return nil
	}
	return &bucket{rate: float64(rate), burst: float64(rate), tokens: float64(rate), last: now(), now: now, sleep: sleep}
}

// take waits until n bytes may pass. A nil bucket never waits.
func (b *bucket) take(ctx context.Context, n int64) error {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	now := b.now()
	b.tokens = min(b.burst, b.tokens+now.Sub(b.last).Seconds()*b.rate)
	b.last = now
	b.tokens -= float64(n)
	wait := time.Duration(-b.tokens / b.rate * float64(time.Second))
	b.mu.Unlock()
	if wait <= 0 {
		return nil
	}
	return b.sleep(ctx, wait)
}

// sleepCtx sleeps for d on the real clock, or until ctx is done.
func sleepCtx(ctx context.Context, d time.Duration) error { return clock.Sleep(ctx, nil, d) }
