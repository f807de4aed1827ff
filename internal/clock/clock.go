package clock

import (
	"context"
	"time"
)

// Clock tells the time and arms timers.
type Clock interface {
	// Now is the current time.
	Now() time.Time
	// NewTimer returns a timer that sends the time on its channel once d
	// has passed.
	NewTimer(d time.Duration) Timer
	// AfterFunc returns a timer that runs f in its own goroutine once d
	// has passed; its channel is nil.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a timer of a Clock, with time.Timer's Stop and Reset.
type Timer interface {
	// C is the channel on which the time is sent (nil for AfterFunc).
	C() <-chan time.Time
	// Stop keeps the timer from firing; it reports whether it was armed.
	Stop() bool
	// Reset re-arms the timer to fire d from now; it reports whether it
	// was armed.
	Reset(d time.Duration) bool
}

// Real is the machine's clock.
type Real struct{}

var _ Clock = Real{}

// Now is time.Now.
func (Real) Now() time.Time { return time.Now() }

// NewTimer is time.NewTimer.
func (Real) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

// AfterFunc is time.AfterFunc.
func (Real) AfterFunc(d time.Duration, f func()) Timer { return realTimer{time.AfterFunc(d, f)} }

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time        { return r.t.C }
func (r realTimer) Stop() bool                 { return r.t.Stop() }
func (r realTimer) Reset(d time.Duration) bool { return r.t.Reset(d) }

// Or returns c, or Real if c is nil: the default of a Clock option.
func Or(c Clock) Clock {
	if c == nil {
		return Real{}
	}
	return c
}

// Since is the time elapsed on c since t.
func Since(c Clock, t time.Time) time.Duration { return c.Now().Sub(t) }

// Sleep waits d on c, or until ctx is done (then it returns ctx.Err()).
func Sleep(ctx context.Context, c Clock, d time.Duration) error {
	t := Or(c).NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C():
		return nil
	}
}
