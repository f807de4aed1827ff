package client

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
)

// fetchSlots bounds the block fetches in flight to one server. A freed slot
// goes to the oldest waiter a reader is blocked on (urgent) before any
// read-ahead: a block the reader needs now — one evicted before it was
// read, or the first of a new run — must not queue behind the dozens of
// blocks fetched ahead of it, or the reader stalls for the whole queue.
// Among equals it is first come, first served, which keeps a sequential
// reader's fetches in file order.
type fetchSlots struct {
	mu   sync.Mutex
	free int
	wait []*slotWaiter // oldest first
}

type slotWaiter struct {
	ready  chan struct{}
	urgent *atomic.Bool // nil: never urgent
}

func newFetchSlots(n int) *fetchSlots { return &fetchSlots{free: n} }

// acquire takes a slot, waiting for one when all are taken. urgent may turn
// true while the caller waits (a reader starts waiting on a read-ahead).
func (s *fetchSlots) acquire(ctx context.Context, urgent *atomic.Bool) error {
	s.mu.Lock()
	if s.free > 0 {
		s.free--
		s.mu.Unlock()
		return nil
	}
	w := &slotWaiter{ready: make(chan struct{}), urgent: urgent}
	s.wait = append(s.wait, w)
	s.mu.Unlock()
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
		s.mu.Lock()
		if i := slices.Index(s.wait, w); i >= 0 {
			s.wait = slices.Delete(s.wait, i, i+1)
			s.mu.Unlock()
			return ctx.Err()
		}
		s.mu.Unlock()
		s.release() // granted as the context ended: hand it on
		return ctx.Err()
	}
}

// release frees a slot: to the oldest urgent waiter, else the oldest.
func (s *fetchSlots) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.wait) == 0 {
		s.free++
		return
	}
	i := slices.IndexFunc(s.wait, func(w *slotWaiter) bool { return w.urgent != nil && w.urgent.Load() })
	if i < 0 {
		i = 0
	}
	w := s.wait[i]
	s.wait = slices.Delete(s.wait, i, i+1)
	close(w.ready)
}

// urgencyKey carries a fetch's *atomic.Bool urgency in its context.
type urgencyKey struct{}

func withUrgency(ctx context.Context, u *atomic.Bool) context.Context {
	return context.WithValue(ctx, urgencyKey{}, u)
}

func urgencyOf(ctx context.Context) *atomic.Bool {
	u, _ := ctx.Value(urgencyKey{}).(*atomic.Bool)
	return u
}
