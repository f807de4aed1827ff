package pebblekv

import (
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble"

	"tessera/internal/kv"
)

// txn is a kv.Txn over a Pebble snapshot (View) or indexed batch (Update).
type txn struct {
	r    pebble.Reader
	w    *pebble.Batch // nil in a View
	done bool
	// gen counts writes, so that Scan notices its callback wrote: a batch
	// iterator sees the batch as it was when the iterator was made.
	gen uint64
}

var _ kv.Txn = (*txn)(nil)

func (t *txn) finish() { t.done = true }

func (t *txn) check(write bool) error {
	if t.done {
		return errDone
	}
	if write && t.w == nil {
		return errors.New("pebblekv: write in a read-only transaction")
	}
	return nil
}

// Get implements kv.Txn.
func (t *txn) Get(key []byte) ([]byte, bool, error) {
	if err := t.check(false); err != nil {
		return nil, false, err
	}
	v, closer, err := t.r.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("pebblekv: get %q: %w", key, err)
	}
	out := clone(v)
	return out, true, closer.Close()
}

// Put implements kv.Txn. The batch copies key and value.
func (t *txn) Put(key, value []byte) error {
	if err := t.check(true); err != nil {
		return err
	}
	if len(key) == 0 {
		return errors.New("pebblekv: put: empty key")
	}
	if err := t.w.Set(key, value, nil); err != nil {
		return fmt.Errorf("pebblekv: put %q: %w", key, err)
	}
	t.gen++
	return nil
}

// Delete implements kv.Txn.
func (t *txn) Delete(key []byte) error {
	if err := t.check(true); err != nil {
		return err
	}
	if err := t.w.Delete(key, nil); err != nil {
		return fmt.Errorf("pebblekv: delete %q: %w", key, err)
	}
	t.gen++
	return nil
}

// Scan implements kv.Txn. When fn writes, the iterator is refreshed to see the
// batch's new state and seeks to just after the current key.
func (t *txn) Scan(start, end []byte, fn func(key, value []byte) (bool, error)) (err error) {
	if err := t.check(false); err != nil {
		return err
	}
	opts := &pebble.IterOptions{LowerBound: start, UpperBound: end}
	it, err := t.r.NewIter(opts)
	if err != nil {
		return fmt.Errorf("pebblekv: scan: %w", err)
	}
	defer func() {
		if cerr := it.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("pebblekv: scan: %w", cerr)
		}
	}()
	for ok := it.First(); ok; {
		k := clone(it.Key())
		v, verr := it.ValueAndErr()
		if verr != nil {
			return fmt.Errorf("pebblekv: scan at %q: %w", k, verr)
		}
		gen := t.gen
		more, err := fn(k, clone(v))
		if err != nil || !more {
			return err
		}
		if t.gen == gen {
			ok = it.Next()
		} else {
			it.SetOptions(opts)
			ok = it.SeekGE(append(k, 0))
		}
	}
	return it.Error()
}

// clone copies b into a slice the caller owns; never nil, since a present
// empty value must not read as absent.
func clone(b []byte) []byte {
	return append(make([]byte, 0, len(b)), b...)
}
