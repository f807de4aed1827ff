package kvtest

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"

	"tessera/internal/kv"
)

// Opener returns a store kept in dir. It reports failures through t.
type Opener func(t *testing.T, dir string) kv.Store

// Run runs the cases every engine must pass, each in a subtest with a fresh
// directory.
func Run(t *testing.T, open Opener) {
	run(t, open, false)
}

// RunDurable runs the cases of Run plus those that check that committed
// writes, and only those, survive Close and reopen.
func RunDurable(t *testing.T, open Opener) {
	run(t, open, true)
}

type testCase struct {
	name string
	fn   func(t *testing.T, h *harness)
}

var cases = []testCase{
	{"GetPutDelete", testGetPutDelete},
	{"Absent", testAbsent},
	{"GetMany", testGetMany},
	{"Prefetch", testPrefetch},
	{"PresumeAbsent", testPresumeAbsent},
	{"ScanBounds", testScanBounds},
	{"ScanManyKeys", testScanManyKeys},
	{"ReadYourWrites", testReadYourWrites},
	{"WritesDuringScan", testWritesDuringScan},
	{"Rollback", testRollback},
	{"ViewIsReadOnly", testViewIsReadOnly},
	{"CopiesKeysAndValues", testCopies},
	{"LargeValue", testLargeValue},
	{"SnapshotView", testSnapshotView},
	{"AtomicUpdates", testAtomicUpdates},
	{"SerializableCounter", testSerializableCounter},
	{"RacingIncrements", testRacingIncrements},
	{"WriteSkew", testWriteSkew},
	{"Phantom", testPhantom},
	{"RandomModel", testRandomModel},
	{"CancelledContext", testCancelledContext},
	{"Closed", testClosed},
	{"WatchCommits", testWatchCommits},
	{"WatchFrom", testWatchFrom},
	{"Election", testElection},
}

var durableCases = []testCase{
	{"Durability", testDurability},
}

func run(t *testing.T, open Opener, durable bool) {
	all := cases
	if durable {
		all = append(append([]testCase(nil), cases...), durableCases...)
	}
	for _, c := range all {
		t.Run(c.name, func(t *testing.T) {
			h := &harness{open: open, dir: t.TempDir()}
			h.reopen(t)
			t.Cleanup(func() { h.close(t) })
			c.fn(t, h)
		})
	}
}

// harness holds the store under test and how to reopen it.
type harness struct {
	open  Opener
	dir   string
	store kv.Store
}

// reopen closes the current store, if any, and opens a new one on the same
// directory.
func (h *harness) reopen(t *testing.T) kv.Store {
	t.Helper()
	h.close(t)
	h.store = h.open(t, h.dir)
	if h.store == nil {
		t.Fatal("factory returned a nil store")
	}
	return h.store
}

func (h *harness) close(t *testing.T) {
	t.Helper()
	if h.store == nil {
		return
	}
	if err := h.store.Close(); err != nil && !errors.Is(err, kv.ErrClosed) {
		t.Errorf("Close: %v", err)
	}
	h.store = nil
}

// pair is a key and its value, as strings so that failures print readably.
type pair struct{ k, v string }

func update(t testing.TB, s kv.Store, fn func(tx kv.Txn) error) {
	t.Helper()
	if err := s.Update(context.Background(), fn); err != nil {
		t.Fatalf("Update: %v", err)
	}
}

func view(t testing.TB, s kv.Store, fn func(tx kv.Txn) error) {
	t.Helper()
	if err := s.View(context.Background(), fn); err != nil {
		t.Fatalf("View: %v", err)
	}
}

// put commits the given key, value pairs in one Update.
func put(t testing.TB, s kv.Store, kvs ...string) {
	t.Helper()
	update(t, s, func(tx kv.Txn) error {
		for i := 0; i+1 < len(kvs); i += 2 {
			if err := tx.Put([]byte(kvs[i]), []byte(kvs[i+1])); err != nil {
				return err
			}
		}
		return nil
	})
}

// get reads key in its own View.
func get(t testing.TB, s kv.Store, key string) (string, bool) {
	t.Helper()
	var v string
	var ok bool
	view(t, s, func(tx kv.Txn) error {
		var err error
		v, ok, err = txGet(tx, key)
		return err
	})
	return v, ok
}

func txGet(tx kv.Txn, key string) (string, bool, error) {
	v, ok, err := tx.Get([]byte(key))
	if err != nil {
		return "", false, err
	}
	if !ok && v != nil {
		return "", false, errors.New("Get of an absent key returned a non-nil value")
	}
	return string(v), ok, nil
}

// txScan collects Scan(start, end).
func txScan(tx kv.Txn, start, end []byte) ([]pair, error) {
	var got []pair
	err := tx.Scan(start, end, func(k, v []byte) (bool, error) {
		got = append(got, pair{string(k), string(v)})
		return true, nil
	})
	return got, err
}

// scan collects Scan(start, end) in its own View.
func scan(t testing.TB, s kv.Store, start, end []byte) []pair {
	t.Helper()
	var got []pair
	view(t, s, func(tx kv.Txn) error {
		var err error
		got, err = txScan(tx, start, end)
		return err
	})
	return got
}

func equalPairs(a, b []pair) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// randomBytes returns n reproducible pseudo-random bytes.
func randomBytes(n int, seed byte) []byte {
	b := make([]byte, n)
	rand.NewChaCha8([32]byte{seed}).Read(b)
	return b
}
