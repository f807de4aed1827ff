package kvtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"tessera/internal/kv"
)

var errBoom = errors.New("boom")

func testReadYourWrites(t *testing.T, h *harness) {
	s := h.store
	put(t, s, "a", "1", "b", "2", "c", "3")
	check := func(tx kv.Txn, want []pair) error {
		for _, p := range want {
			if v, ok, err := txGet(tx, p.k); err != nil || !ok || v != p.v {
				return fmt.Errorf("Get(%q) = %q, %v, %v; want %q", p.k, v, ok, err, p.v)
			}
		}
		got, err := txScan(tx, nil, nil)
		if err != nil || !equalPairs(got, want) {
			return fmt.Errorf("Scan = %q, %v; want %q", got, err, want)
		}
		return nil
	}
	update(t, s, func(tx kv.Txn) error {
		for _, w := range []pair{{"b", "20"}, {"d", "4"}, {"aa", "5"}} {
			if err := tx.Put([]byte(w.k), []byte(w.v)); err != nil {
				return err
			}
		}
		if err := tx.Delete([]byte("c")); err != nil {
			return err
		}
		if _, ok, err := txGet(tx, "c"); err != nil || ok {
			return fmt.Errorf("Get(c) after Delete in the same Update: present %v, err %v", ok, err)
		}
		if err := check(tx, []pair{{"a", "1"}, {"aa", "5"}, {"b", "20"}, {"d", "4"}}); err != nil {
			return err
		}
		got, err := txScan(tx, []byte("b"), nil)
		if want := []pair{{"b", "20"}, {"d", "4"}}; err != nil || !equalPairs(got, want) {
			return fmt.Errorf("Scan(b, nil) = %q, %v; want %q", got, err, want)
		}
		// Undo and redo within the same transaction.
		if err := tx.Delete([]byte("d")); err != nil {
			return err
		}
		if err := tx.Put([]byte("c"), []byte("30")); err != nil {
			return err
		}
		return check(tx, []pair{{"a", "1"}, {"aa", "5"}, {"b", "20"}, {"c", "30"}})
	})
	view(t, s, func(tx kv.Txn) error {
		return check(tx, []pair{{"a", "1"}, {"aa", "5"}, {"b", "20"}, {"c", "30"}})
	})
}

func testWritesDuringScan(t *testing.T, h *harness) {
	s := h.store
	var kvs []string
	for i := range 20 {
		kvs = append(kvs, fmt.Sprintf("k%02d", i), "v")
	}
	put(t, s, kvs...)

	var visited []pair
	update(t, s, func(tx kv.Txn) error {
		visited = nil
		return tx.Scan(nil, nil, func(k, v []byte) (bool, error) {
			visited = append(visited, pair{string(k), string(v)})
			switch string(k) {
			case "k05":
				// Ahead of the scan: seen. Behind it: not seen.
				for _, w := range []pair{{"k10", "new"}, {"k05x", "ahead"}, {"a", "behind"}} {
					if err := tx.Put([]byte(w.k), []byte(w.v)); err != nil {
						return false, err
					}
				}
			case "k15":
				// Overwrite the current key and keep it.
				return true, tx.Put(k, []byte("kept"))
			}
			return true, tx.Delete(k)
		})
	})
	var want []pair
	for i := range 20 {
		k := fmt.Sprintf("k%02d", i)
		switch i {
		case 6:
			want = append(want, pair{"k05x", "ahead"})
		case 10:
			want = append(want, pair{k, "new"})
			continue
		}
		want = append(want, pair{k, "v"})
	}
	if !equalPairs(visited, want) {
		t.Fatalf("Scan that writes visited %q;\nwant %q", visited, want)
	}
	if got, want := scan(t, s, nil, nil), []pair{{"a", "behind"}, {"k15", "kept"}}; !equalPairs(got, want) {
		t.Fatalf("after the Scan that writes, Scan = %q; want %q", got, want)
	}
}

func testRollback(t *testing.T, h *harness) {
	s := h.store
	put(t, s, "a", "1", "c", "3")
	err := s.Update(context.Background(), func(tx kv.Txn) error {
		for _, k := range []string{"a", "b"} {
			if err := tx.Put([]byte(k), []byte("2")); err != nil {
				return err
			}
		}
		if err := tx.Delete([]byte("c")); err != nil {
			return err
		}
		return fmt.Errorf("fail after writes: %w", errBoom)
	})
	if !errors.Is(err, errBoom) {
		t.Fatalf("Update whose fn failed = %v; want an error wrapping %v", err, errBoom)
	}
	if got, want := scan(t, s, nil, nil), []pair{{"a", "1"}, {"c", "3"}}; !equalPairs(got, want) {
		t.Fatalf("after a failed Update, Scan = %q; want %q", got, want)
	}
	err = s.View(context.Background(), func(tx kv.Txn) error { return errBoom })
	if !errors.Is(err, errBoom) {
		t.Fatalf("View whose fn failed = %v; want an error wrapping %v", err, errBoom)
	}
}

// testSnapshotView checks that a View does not see an Update that commits
// while it runs. Engines whose writers wait for readers pass too: the View
// gives the Update a moment, then goes on.
func testSnapshotView(t *testing.T, h *harness) {
	s := h.store
	put(t, s, "a", "0", "b", "0")
	done := make(chan error, 1)
	started := false
	view(t, s, func(tx kv.Txn) error {
		if v, _, err := txGet(tx, "a"); err != nil || v != "0" {
			return fmt.Errorf("Get(a) = %q, %v; want 0", v, err)
		}
		if !started { // fn may run more than once
			started = true
			go func() {
				done <- s.Update(context.Background(), func(tx kv.Txn) error {
					if err := tx.Put([]byte("a"), []byte("1")); err != nil {
						return err
					}
					return tx.Put([]byte("b"), []byte("1"))
				})
			}()
		}
		select {
		case err := <-done:
			done <- err
		case <-time.After(100 * time.Millisecond):
		}
		got, err := txScan(tx, nil, nil)
		if want := []pair{{"a", "0"}, {"b", "0"}}; err != nil || !equalPairs(got, want) {
			return fmt.Errorf("Scan in a View while an Update committed = %q, %v; want %q", got, err, want)
		}
		return nil
	})
	if err := <-done; err != nil {
		t.Fatalf("concurrent Update: %v", err)
	}
	if got, want := scan(t, s, nil, nil), []pair{{"a", "1"}, {"b", "1"}}; !equalPairs(got, want) {
		t.Fatalf("after the Update, Scan = %q; want %q", got, want)
	}
}

// testAtomicUpdates checks that concurrent Views see all or none of each
// Update's writes.
func testAtomicUpdates(t *testing.T, h *harness) {
	s := h.store
	const rounds, nkeys, readers = 40, 5, 2
	key := func(i int) string { return "k" + strconv.Itoa(i) }
	write := func(round int) {
		update(t, s, func(tx kv.Txn) error {
			for i := range nkeys {
				if err := tx.Put([]byte(key(i)), []byte(strconv.Itoa(round))); err != nil {
					return err
				}
			}
			return nil
		})
	}
	write(0)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range readers {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				err := s.View(context.Background(), func(tx kv.Txn) error {
					first, _, err := txGet(tx, key(0))
					if err != nil {
						return err
					}
					for i := 1; i < nkeys; i++ {
						if v, _, err := txGet(tx, key(i)); err != nil || v != first {
							return fmt.Errorf("Get(%s) = %q, %v; Get(%s) = %q in the same View", key(i), v, err, key(0), first)
						}
					}
					got, err := txScan(tx, []byte("k"), kv.PrefixEnd([]byte("k")))
					if err != nil || len(got) != nkeys {
						return fmt.Errorf("Scan = %q, %v; want %d keys", got, err, nkeys)
					}
					for _, p := range got {
						if p.v != first {
							return fmt.Errorf("Scan = %q; Get(%s) = %q in the same View", got, key(0), first)
						}
					}
					return nil
				})
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	for round := 1; round <= rounds; round++ {
		write(round)
	}
	close(stop)
	wg.Wait()
}

// testSerializableCounter has goroutines increment one key with
// read-increment-write Updates: a lost update shows as a short count.
func testSerializableCounter(t *testing.T, h *harness) {
	s := h.store
	const workers, each = 8, 8
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range each {
				err := s.Update(context.Background(), func(tx kv.Txn) error {
					v, _, err := tx.Get([]byte("counter"))
					if err != nil {
						return err
					}
					n := 0
					if v != nil {
						if n, err = strconv.Atoi(string(v)); err != nil {
							return err
						}
					}
					runtime.Gosched() // invite another transaction in between
					return tx.Put([]byte("counter"), []byte(strconv.Itoa(n+1)))
				})
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if v, _ := get(t, s, "counter"); v != strconv.Itoa(workers*each) {
		t.Fatalf("counter = %s after %d increments", v, workers*each)
	}
}

func testDurability(t *testing.T, h *harness) {
	s := h.store
	big := randomBytes(1<<20, 5)
	update(t, s, func(tx kv.Txn) error {
		for _, w := range []pair{{"a", "1"}, {"b", "2"}, {"big", string(big)}} {
			if err := tx.Put([]byte(w.k), []byte(w.v)); err != nil {
				return err
			}
		}
		return nil
	})
	update(t, s, func(tx kv.Txn) error {
		if err := tx.Delete([]byte("b")); err != nil {
			return err
		}
		return tx.Put([]byte("c"), []byte("3"))
	})
	err := s.Update(context.Background(), func(tx kv.Txn) error {
		if err := tx.Put([]byte("d"), []byte("4")); err != nil {
			return err
		}
		if err := tx.Delete([]byte("a")); err != nil {
			return err
		}
		return errBoom
	})
	if !errors.Is(err, errBoom) {
		t.Fatalf("failing Update = %v; want %v", err, errBoom)
	}

	s = h.reopen(t)
	got := scan(t, s, nil, nil)
	if len(got) != 3 || got[0] != (pair{"a", "1"}) || got[1].k != "big" || got[2] != (pair{"c", "3"}) {
		t.Fatalf("after reopen, Scan has keys %q; want a, big, c", keysOf(got))
	}
	if !bytes.Equal([]byte(got[1].v), big) {
		t.Fatal("after reopen, the 1 MiB value differs")
	}

	put(t, s, "e", "5")
	s = h.reopen(t)
	if got, want := keysOf(scan(t, s, nil, nil)), []string{"a", "big", "c", "e"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after a second reopen, keys = %q; want %q", got, want)
	}
}

func keysOf(ps []pair) []string {
	ks := make([]string, len(ps))
	for i, p := range ps {
		ks[i] = p.k
	}
	return ks
}
