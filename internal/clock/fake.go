package clock

import (
	"sort"
	"sync"
	"time"
)

// Fake is a Clock that moves only when Advance is called. It is safe for
// concurrent use.
type Fake struct {
	mu     sync.Mutex
	now    time.Time
	timers map[*fakeTimer]bool // armed
	arms   uint64
}

var _ Clock = (*Fake)(nil)

// NewFake returns a Fake clock reading start.
func NewFake(start time.Time) *Fake {
	return &Fake{now: start, timers: make(map[*fakeTimer]bool)}
}

// Now is the fake time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// Arms is how many times a timer was armed on f (NewTimer, AfterFunc,
// Reset): a test waits for it to grow to know the code under test reacted.
func (f *Fake) Arms() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.arms
}

// Pending is how many timers are armed.
func (f *Fake) Pending() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.timers)
}

// NewTimer returns a timer that fires when Advance passes now+d.
func (f *Fake) NewTimer(d time.Duration) Timer {
	t := &fakeTimer{f: f, c: make(chan time.Time, 1)}
	t.Reset(d)
	return t
}

// AfterFunc returns a timer that runs fn (in its own goroutine) when
// Advance passes now+d.
func (f *Fake) AfterFunc(d time.Duration, fn func()) Timer {
	t := &fakeTimer{f: f, fn: fn}
	t.Reset(d)
	return t
}

// Advance moves the clock on by d, firing every timer whose deadline it
// reaches, earliest first, each with its deadline as the time.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	end := f.now.Add(d)
	var due []*fakeTimer
	for t := range f.timers {
		if !t.at.After(end) {
			due = append(due, t)
			delete(f.timers, t)
		}
	}
	sort.Slice(due, func(i, j int) bool { return due[i].at.Before(due[j].at) })
	f.now = end
	f.mu.Unlock()
	for _, t := range due {
		if t.fn != nil {
			go t.fn()
			continue
		}
		select {
		case t.c <- t.at:
		default: // a fire not yet received, as with time.Timer
		}
	}
}

type fakeTimer struct {
	f  *Fake
	c  chan time.Time
	fn func()
	at time.Time // guarded by f.mu
}

func (t *fakeTimer) C() <-chan time.Time { return t.c }

func (t *fakeTimer) Stop() bool {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	armed := t.f.timers[t]
	delete(t.f.timers, t)
	return armed
}

func (t *fakeTimer) Reset(d time.Duration) bool {
	t.f.mu.Lock()
	armed := t.f.timers[t]
	t.at = t.f.now.Add(d)
	t.f.arms++
	fire := d <= 0
	if !fire {
		t.f.timers[t] = true
	} else {
		delete(t.f.timers, t)
	}
	t.f.mu.Unlock()
	if fire {
		// A timer for no time at all fires at once, as time's does.
		if t.fn != nil {
			go t.fn()
		} else {
			select {
			case t.c <- t.at:
			default:
			}
		}
	}
	return armed
}

// AdvanceToNext moves the clock on to the earliest armed timer's deadline
// and fires it (and any other due then); it returns how far it moved and
// false if no timer was armed. A test drives code that waits on timers
// with it without ever passing a deadline the code has not reached.
func (f *Fake) AdvanceToNext() (time.Duration, bool) {
	f.mu.Lock()
	var next time.Time
	for t := range f.timers {
		if next.IsZero() || t.at.Before(next) {
			next = t.at
		}
	}
	d := next.Sub(f.now)
	f.mu.Unlock()
	if next.IsZero() {
		return 0, false
	}
	f.Advance(max(d, 0))
	return d, true
}
