package faultkv

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"

	"tessera/internal/kv"
)

// ErrInjected is the error of an injected failure.
var ErrInjected = errors.New("faultkv: injected failure")

// Options set the chances, each in [0, 1], of the faults an Update draws.
type Options struct {
	Seed     uint64
	Conflict float64 // fn runs again after a rolled-back run
	Exhaust  float64 // Update fails with kv.ErrConflict
	Fail     float64 // Update fails with ErrInjected
	// MaxConflicts bounds the injected conflicts in a row of one Update
	// [3].
	MaxConflicts int
	// Rerun is the chance that a View's run is cut short at one of its
	// first reads and fn runs again (view.go).
	Rerun float64
}

// Stats counts the faults injected so far: runs of fn that succeeded and
// were rolled back (a fault drawn for a run whose fn failed is not one).
type Stats struct {
	Updates, Conflicts, Exhausted, Failed int
	Views, Reruns                         int
}

// Store is a kv.Store with injected faults. It is safe for concurrent use
// when the wrapped store is.
type Store struct {
	inner kv.Store
	opts  Options

	mu     sync.Mutex // guards the fields below
	rng    *rand.Rand
	paused bool
	stats  Stats
}

var _ kv.Store = (*Store)(nil)

// New wraps inner.
func New(inner kv.Store, opts Options) *Store {
	if opts.MaxConflicts <= 0 {
		opts.MaxConflicts = 3
	}
	return &Store{inner: inner, opts: opts, rng: rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x5eed))}
}

// Pause stops (true) or resumes (false) injecting faults.
func (s *Store) Pause(paused bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.paused = paused
}

// Stats returns the counts of injected faults.
func (s *Store) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// fault is what one run of an Update's fn ends with.
type fault int

const (
	none fault = iota
	conflict
	exhaust
	fail
)

// draw picks the fault of the next run; conflicts is how many this Update
// already had.
func (s *Store) draw(conflicts int) fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.paused {
		return none
	}
	r := s.rng.Float64()
	switch {
	case r < s.opts.Fail:
		return fail
	case r < s.opts.Fail+s.opts.Exhaust:
		return exhaust
	case r < s.opts.Fail+s.opts.Exhaust+s.opts.Conflict && conflicts < s.opts.MaxConflicts:
		return conflict
	}
	return none
}

// rolledBack is what fn's wrapper returns to make the wrapped store roll a
// run back.
type rolledBack struct{ f fault }

func (r *rolledBack) Error() string { return fmt.Sprintf("faultkv: run rolled back (fault %d)", r.f) }

// Update runs fn on the wrapped store with the faults it draws.
func (s *Store) Update(ctx context.Context, fn func(tx kv.Txn) error) error {
	s.mu.Lock()
	s.stats.Updates++
	s.mu.Unlock()
	for conflicts := 0; ; conflicts++ {
		var f fault
		err := s.inner.Update(ctx, func(tx kv.Txn) error {
			f = s.draw(conflicts) // per run: the wrapped store may run fn again
			if err := fn(tx); err != nil {
				return err
			}
			if f != none {
				return &rolledBack{f}
			}
			return nil
		})
		var rb *rolledBack
		if !errors.As(err, &rb) {
			return err
		}
		s.mu.Lock()
		switch rb.f {
		case conflict:
			s.stats.Conflicts++
		case exhaust:
			s.stats.Exhausted++
		default:
			s.stats.Failed++
		}
		s.mu.Unlock()
		switch rb.f {
		case conflict:
			continue
		case exhaust:
			return fmt.Errorf("faultkv: update: %w (injected)", kv.ErrConflict)
		default:
			return fmt.Errorf("faultkv: update: %w", ErrInjected)
		}
	}
}

// Close closes the wrapped store.
func (s *Store) Close() error { return s.inner.Close() }
