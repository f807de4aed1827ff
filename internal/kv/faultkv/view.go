package faultkv

import (
	"context"
	"errors"

	"tessera/internal/kv"
)

// errCut ends a View's run that a rerun fault cut short.
var errCut = errors.New("faultkv: view run cut short (rerun injected)")

// View runs fn on the wrapped store. With Options.Rerun, a run may first
// be cut short at a read drawn from the first maxCutReads (a Get, or a
// key a Scan visits, fails), and fn then runs again, as an engine does
// when a View's snapshot can no longer be read; a run that finishes
// before its cut stands.
func (s *Store) View(ctx context.Context, fn func(tx kv.Txn) error) error {
	s.mu.Lock()
	s.stats.Views++
	cut := 0
	if !s.paused && s.rng.Float64() < s.opts.Rerun {
		cut = 1 + s.rng.IntN(maxCutReads)
	}
	s.mu.Unlock()
	if cut == 0 {
		return s.inner.View(ctx, fn)
	}
	cuttable := false
	err := s.inner.View(ctx, func(tx kv.Txn) error {
		ct := &cutTxn{Txn: tx, left: cut}
		err := fn(ct)
		cuttable = ct.cut
		return err
	})
	if !cuttable {
		return err
	}
	s.mu.Lock()
	s.stats.Reruns++
	s.mu.Unlock()
	return s.inner.View(ctx, fn)
}

// maxCutReads bounds where a rerun fault cuts a View's run.
const maxCutReads = 8

// cutTxn fails its reads once left of them were made.
type cutTxn struct {
	kv.Txn
	left int
	cut  bool
}

func (c *cutTxn) read() error {
	if c.cut {
		return errCut
	}
	c.left--
	if c.left <= 0 {
		c.cut = true
		return errCut
	}
	return nil
}

func (c *cutTxn) Get(key []byte) ([]byte, bool, error) {
	if err := c.read(); err != nil {
		return nil, false, err
	}
	return c.Txn.Get(key)
}

func (c *cutTxn) Scan(start, end []byte, fn func(key, value []byte) (bool, error)) error {
	if err := c.read(); err != nil {
		return err
	}
	return c.Txn.Scan(start, end, func(k, v []byte) (bool, error) {
		if err := c.read(); err != nil {
			return false, err
		}
		return fn(k, v)
	})
}
