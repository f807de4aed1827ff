package memkv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"sync/atomic"

	"github.com/google/btree"

	"tessera/internal/kv"
	"tessera/internal/kv/kvlocal"
)

var (
	_ kv.Store   = (*Store)(nil)
	_ kv.Watcher = (*Store)(nil)
	_ kv.Elector = (*Store)(nil)
)

// btreeDegree is the B-tree's minimum degree. Every write in an Update copies
// the nodes on its path, so small nodes keep that copying short.
const btreeDegree = 8

// Store is an in-memory kv.Store. The zero value is not usable; call New.
type Store struct {
	// writer is a one-slot semaphore held by the running Update. It is a
	// channel rather than a mutex so that waiting for it honours the context.
	writer chan struct{}
	// tree is the committed state. A published tree is never modified.
	tree   atomic.Pointer[btree.BTreeG[item]]
	closed atomic.Bool

	// feed and elector are the in-process kv.Watcher and kv.Elector.
	feed    kvlocal.Feed
	elector kvlocal.Elector
}

// item is one key and its value. Neither slice is modified once stored.
type item struct{ key, value []byte }

func less(a, b item) bool { return bytes.Compare(a.key, b.key) < 0 }

// New returns an empty store.
func New() *Store {
	s := &Store{writer: make(chan struct{}, 1)}
	s.tree.Store(btree.NewG(btreeDegree, less))
	return s
}

// View implements kv.Store.
func (s *Store) View(ctx context.Context, fn func(tx kv.Txn) error) error {
	if err := s.check(ctx); err != nil {
		return fmt.Errorf("memkv: view: %w", err)
	}
	t := &txn{tree: s.tree.Load()}
	defer t.finish()
	return fn(t)
}

// Update implements kv.Store.
func (s *Store) Update(ctx context.Context, fn func(tx kv.Txn) error) error {
	if err := s.check(ctx); err != nil {
		return fmt.Errorf("memkv: update: %w", err)
	}
	select {
	case s.writer <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("memkv: update: %w", ctx.Err())
	}
	defer func() { <-s.writer }()
	if err := s.check(ctx); err != nil {
		return fmt.Errorf("memkv: update: %w", err)
	}

	// Clone writes only the base tree's copy-on-write context, which readers
	// of the base never touch, so Views may go on reading it meanwhile.
	base := s.tree.Load()
	t := &txn{tree: base.Clone(), writable: true, touched: make(map[string]bool)}
	err := fn(t)
	t.finish()
	if err != nil {
		return err
	}
	if s.closed.Load() {
		return fmt.Errorf("memkv: update: %w", kv.ErrClosed)
	}
	s.tree.Store(t.tree)
	s.feed.Publish(t.changes(base))
	return nil
}

// Watch implements kv.Watcher with an in-process feed (package kvlocal).
func (s *Store) Watch(ctx context.Context, prefix []byte, from int64) (<-chan []kv.Change, error) {
	return s.feed.Watch(ctx, prefix, from)
}

// Campaign implements kv.Elector within this process (package kvlocal).
func (s *Store) Campaign(ctx context.Context, name, id string) (kv.Leadership, error) {
	return s.elector.Campaign(ctx, name, id)
}

// Close implements kv.Store. Updates still running when it is called fail
// with kv.ErrClosed; watches end and leaderships are lost.
func (s *Store) Close() error {
	s.closed.Store(true)
	s.feed.Close()
	s.elector.Close()
	return nil
}

func (s *Store) check(ctx context.Context) error {
	if s.closed.Load() {
		return kv.ErrClosed
	}
	return ctx.Err()
}

// errDone reports use of a transaction after its function returned.
var errDone = errors.New("memkv: transaction used after its function returned")

// scanChunk is how many entries Scan gathers from the tree at a time; it
// calls back outside the tree walk so that callbacks may write.
const scanChunk = 64

// txn is a kv.Txn over one tree: the published snapshot in a View, a private
// clone in an Update.
type txn struct {
	tree     *btree.BTreeG[item]
	writable bool
	done     bool
	// gen counts writes, so that Scan notices its callback wrote.
	gen uint64
	// touched holds the keys an Update wrote, for its change feed.
	touched map[string]bool
}

// changes returns the net effect of an Update on base, by key: a Put of
// each key present at the end, a delete of each key it removed from base.
func (t *txn) changes(base *btree.BTreeG[item]) []kv.Change {
	keys := make([]string, 0, len(t.touched))
	for k := range t.touched {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []kv.Change
	for _, k := range keys {
		if it, ok := t.tree.Get(item{key: []byte(k)}); ok {
			out = append(out, kv.Change{Key: it.key, Value: it.value})
		} else if _, had := base.Get(item{key: []byte(k)}); had {
			out = append(out, kv.Change{Key: []byte(k), Deleted: true})
		}
	}
	return out
}

var _ kv.Txn = (*txn)(nil)

func (t *txn) finish() { t.done = true }

func (t *txn) check(write bool) error {
	if t.done {
		return errDone
	}
	if write && !t.writable {
		return errors.New("memkv: write in a read-only transaction")
	}
	return nil
}

// Get implements kv.Txn.
func (t *txn) Get(key []byte) ([]byte, bool, error) {
	if err := t.check(false); err != nil {
		return nil, false, err
	}
	it, ok := t.tree.Get(item{key: key})
	return it.value, ok, nil
}

// Put implements kv.Txn.
func (t *txn) Put(key, value []byte) error {
	if err := t.check(true); err != nil {
		return err
	}
	if len(key) == 0 {
		return errors.New("memkv: put: empty key")
	}
	t.tree.ReplaceOrInsert(item{key: bytes.Clone(key), value: bytes.Clone(value)})
	t.touched[string(key)] = true
	t.gen++
	return nil
}

// Delete implements kv.Txn.
func (t *txn) Delete(key []byte) error {
	if err := t.check(true); err != nil {
		return err
	}
	t.tree.Delete(item{key: key})
	t.touched[string(key)] = true
	t.gen++
	return nil
}

// Scan implements kv.Txn. It gathers up to scanChunk entries, then calls fn
// on them; when fn writes, it gathers again from just after the current key.
func (t *txn) Scan(start, end []byte, fn func(key, value []byte) (bool, error)) error {
	if err := t.check(false); err != nil {
		return err
	}
	var chunk [scanChunk]item
	from := start
	for {
		n := 0
		t.tree.AscendGreaterOrEqual(item{key: from}, func(it item) bool {
			if end != nil && bytes.Compare(it.key, end) >= 0 {
				return false
			}
			chunk[n] = it
			n++
			return n < len(chunk)
		})
		if n == 0 {
			return nil
		}
		for i := range n {
			gen := t.gen
			more, err := fn(chunk[i].key, chunk[i].value)
			if err != nil || !more {
				return err
			}
			if t.gen != gen {
				n = i + 1 // the rest of the chunk may be stale
				break
			}
		}
		// The smallest key after the last one called back.
		last := chunk[n-1].key
		from = append(last[:len(last):len(last)], 0)
	}
}
