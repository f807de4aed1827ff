package wan

import (
	"sync"
	"sync/atomic"
	"time"
)

// catchUp is how far a direction's schedule may lag the present: the burst
// the cap lets through to make up for late wake-ups.
//
// Why: a chunk that must wait sleeps on a timer, and on a loaded machine a
// timer of about a millisecond fires a millisecond or more late. If the
// schedule restarted from "now" after every late wake-up, the time lost
// would never be made up, and a lone connection (whose reservations never
// queue behind another's) would get about half the cap. Letting the schedule
// lag by up to catchUp means a late sleeper finds the bytes it missed
// already due and passes them at once, so its average stays at the cap.
// The price is a burst: over any window of length W, a direction passes at
// most rate × (W + catchUp) bytes plus one chunk, never more; after an idle
// spell the first catchUp's worth of bytes passes without waiting.
//
// 10 ms: several times the lateness measured here (a 1.3 ms timer taking
// 2.6 ms), yet small against the round trips links emulate (tens of ms).
const catchUp = 10 * time.Millisecond

// direction is the state one direction of a Link shares among all its
// connections: the cap's schedule and the byte counter, and the cap each
// connection has of its own (flowRate).
type direction struct {
	gate     *gate
	rate     atomic.Int64 // bytes per second; <= 0: no cap
	flowRate atomic.Int64 // bytes per second per connection; <= 0: none
	bytes    atomic.Int64
	sched    schedule
}

// reserve books n bytes on the direction's shared schedule and returns how
// long the caller must wait, from now, before they may pass (0: at once).
// Reservations follow each other back to back, across every connection
// together, so bytes never pass faster than the rate beyond the catchUp
// burst.
func (d *direction) reserve(n int, now time.Time) time.Duration {
	return d.sched.reserve(d.rate.Load(), n, now)
}

// schedule is one cap's timeline: when everything reserved on it so far has
// passed. A direction has one shared by its connections; each connection
// has one of its own for the flow cap.
type schedule struct {
	mu   sync.Mutex
	next time.Time
}

// reserve books n bytes at rate r (bytes per second; <= 0: no cap) and
// returns how long to wait from now. A schedule that lags now by more than
// catchUp (the link was idle, or its sleepers woke very late) is brought up
// to now - catchUp: a lag up to that is made up, an older one is forgotten.
func (s *schedule) reserve(r int64, n int, now time.Time) time.Duration {
	if r <= 0 || n == 0 {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if floor := now.Add(-catchUp); s.next.Before(floor) {
		s.next = floor
	}
	s.next = s.next.Add(time.Duration(int64(n) * int64(time.Second) / r))
	if w := s.next.Sub(now); w > 0 {
		return w
	}
	return 0
}
