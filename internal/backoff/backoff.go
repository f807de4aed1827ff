package backoff

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"tessera/internal/clock"
)

// Policy is the shape of a sequence of waits (see the package comment).
type Policy struct {
	// Base is the first wait; it must be above 0.
	Base time.Duration
	// Max caps every wait before jitter; 0 (or below, which Check
	// refuses) means no cap.
	Max time.Duration
	// Factor is the growth from one wait to the next; 0 means 2, and
	// below 1 counts as 1.
	Factor float64
	// Jitter spreads a wait d over [d(1-Jitter), d(1+Jitter)); 0 means
	// none.
	Jitter float64
	// Rand draws an integer in [0, n) for n > 0; nil means
	// math/rand/v2's Int64N. It must be safe for concurrent use if
	// Backoffs of the Policy run concurrently.
	Rand func(n int64) int64
}

// Check reports what is wrong with p, if anything.
func (p Policy) Check() error {
	var errs []error
	if p.Base <= 0 {
		errs = append(errs, fmt.Errorf("backoff base %v: must be above 0", p.Base))
	}
	if p.Max < 0 {
		errs = append(errs, fmt.Errorf("backoff max %v: must not be negative", p.Max))
	} else if p.Max > 0 && p.Max < p.Base {
		errs = append(errs, fmt.Errorf("backoff max %v: below the base %v", p.Max, p.Base))
	}
	if p.Factor != 0 && !(p.Factor >= 1 && p.Factor <= 1000) {
		errs = append(errs, fmt.Errorf("backoff factor %v: must be in [1, 1000]", p.Factor))
	}
	if !(p.Jitter >= 0 && p.Jitter <= 1) {
		errs = append(errs, fmt.Errorf("backoff jitter %v: must be in [0, 1]", p.Jitter))
	}
	return errors.Join(errs...)
}

// Delay is the wait after n failures (n = 0: Base), without jitter:
// min(Base·Factor^n, Max), and never more than the longest Duration.
func (p Policy) Delay(n int) time.Duration {
	f := p.Factor
	switch {
	case f == 0:
		f = 2
	case !(f >= 1): // below 1 or NaN, which Check refuses: no growth
		f = 1
	}
	d := time.Duration(math.MaxInt64)
	// A power of two times a Duration is exact in a float64, so that the
	// usual doubling gives whole Durations.
	if g := float64(max(p.Base, 0)) * math.Pow(f, float64(max(n, 0))); g < math.MaxInt64 {
		d = time.Duration(g)
	}
	if p.Max > 0 {
		d = min(d, p.Max)
	}
	return d
}

// jittered spreads d over [d(1-Jitter), d(1+Jitter)).
func (p Policy) jittered(d time.Duration) time.Duration {
	if !(p.Jitter > 0) || d <= 0 { // NaN too, which Check refuses
		return d
	}
	j := min(p.Jitter, 1)
	lo := time.Duration(float64(d) * (1 - j))
	span := int64(float64(d) * 2 * j)
	if span <= 0 {
		return d
	}
	if span > math.MaxInt64-int64(lo) {
		span = math.MaxInt64 - int64(lo)
	}
	draw := rand.Int64N
	if p.Rand != nil {
		draw = p.Rand
	}
	return lo + time.Duration(draw(span))
}

// Start returns a Backoff whose first wait is p's Base.
func (p Policy) Start() *Backoff { return &Backoff{p: p} }

// Backoff is one sequence of waits of a Policy, made by Policy.Start.
type Backoff struct {
	p Policy
	n int // waits given since Start or Reset
}

// Next returns the next wait, Delay(Waits()) with jitter, and moves the
// sequence on.
func (b *Backoff) Next() time.Duration {
	d := b.p.jittered(b.p.Delay(b.n))
	if b.n < math.MaxInt32 {
		b.n++
	}
	return d
}

// Wait sleeps the next wait on c (nil: the real clock); it returns ctx's
// error if ctx ends first (without moving the sequence on if it had
// ended before), nil otherwise.
func (b *Backoff) Wait(ctx context.Context, c clock.Clock) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return clock.Sleep(ctx, c, b.Next())
}

// Reset starts the sequence again: the next wait is Base.
func (b *Backoff) Reset() { b.n = 0 }

// Waits is how many waits Next has given since Start or Reset.
func (b *Backoff) Waits() int { return b.n }
