package boltkv

import (
	"bytes"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"tessera/internal/kv"
)

// errDone reports use of a transaction after its function returned.
var errDone = errors.New("boltkv: transaction used after its function returned")

// txn is a kv.Txn over the store's bucket in one bbolt transaction.
type txn struct {
	b        *bolt.Bucket
	writable bool
	done     bool
	// gen counts writes, so that Scan notices its callback wrote: a bbolt
	// cursor is undefined after its bucket changes.
	gen uint64
}

var _ kv.Txn = (*txn)(nil)

func (t *txn) check(write bool) error {
	if t.done {
		return errDone
	}
	if write && !t.writable {
		return errors.New("boltkv: write in a read-only transaction")
	}
	return nil
}

// Get implements kv.Txn.
func (t *txn) Get(key []byte) ([]byte, bool, error) {
	if err := t.check(false); err != nil {
		return nil, false, err
	}
	v := t.b.Get(key)
	return v, v != nil, nil
}

// Put implements kv.Txn. bbolt copies the key but keeps the value slice until
// commit, so Put copies the value.
func (t *txn) Put(key, value []byte) error {
	if err := t.check(true); err != nil {
		return err
	}
	v := make([]byte, len(value)) // non-nil even when empty: nil reads as absent
	copy(v, value)
	if err := t.b.Put(key, v); err != nil {
		return fmt.Errorf("boltkv: put %q: %w", key, err)
	}
	t.gen++
	return nil
}

// Delete implements kv.Txn.
func (t *txn) Delete(key []byte) error {
	if err := t.check(true); err != nil {
		return err
	}
	if err := t.b.Delete(key); err != nil {
		return fmt.Errorf("boltkv: delete %q: %w", key, err)
	}
	t.gen++
	return nil
}

// Scan implements kv.Txn. When fn writes, the cursor seeks again to just after
// the current key.
func (t *txn) Scan(start, end []byte, fn func(key, value []byte) (bool, error)) error {
	if err := t.check(false); err != nil {
		return err
	}
	c := t.b.Cursor()
	k, v := c.Seek(start)
	for k != nil && (end == nil || bytes.Compare(k, end) < 0) {
		gen := t.gen
		more, err := fn(k, v)
		if err != nil || !more {
			return err
		}
		if t.gen == gen {
			k, v = c.Next()
		} else {
			k, v = c.Seek(append(k[:len(k):len(k)], 0))
		}
	}
	return nil
}
