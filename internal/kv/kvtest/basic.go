package kvtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"tessera/internal/kv"
)

func testGetPutDelete(t *testing.T, h *harness) {
	s := h.store
	put(t, s, "a", "1", "b", "2")
	if v, ok := get(t, s, "a"); !ok || v != "1" {
		t.Fatalf("Get(a) = %q, %v; want 1, true", v, ok)
	}
	update(t, s, func(tx kv.Txn) error {
		if err := tx.Put([]byte("a"), []byte("3")); err != nil {
			return err
		}
		return tx.Delete([]byte("b"))
	})
	if v, ok := get(t, s, "a"); !ok || v != "3" {
		t.Fatalf("Get(a) after overwrite = %q, %v; want 3, true", v, ok)
	}
	if v, ok := get(t, s, "b"); ok {
		t.Fatalf("Get(b) after Delete = %q, true; want absent", v)
	}

	// An empty value is a present key.
	update(t, s, func(tx kv.Txn) error { return tx.Put([]byte("e"), nil) })
	if v, ok := get(t, s, "e"); !ok || v != "" {
		t.Fatalf("Get(e) = %q, %v; want empty, true", v, ok)
	}
	if got, want := scan(t, s, nil, nil), []pair{{"a", "3"}, {"e", ""}}; !equalPairs(got, want) {
		t.Fatalf("Scan = %q; want %q", got, want)
	}

	// An empty key is refused and the transaction does not commit.
	err := s.Update(context.Background(), func(tx kv.Txn) error {
		return tx.Put(nil, []byte("x"))
	})
	if err == nil {
		t.Fatal("Put of an empty key succeeded")
	}
}

func testAbsent(t *testing.T, h *harness) {
	s := h.store
	check := func(tx kv.Txn) error {
		v, ok, err := tx.Get([]byte("nope"))
		if err != nil || ok || v != nil {
			return fmt.Errorf("Get(absent) = %q, %v, %v; want nil, false, nil", v, ok, err)
		}
		got, err := txScan(tx, nil, nil)
		if err != nil || len(got) != 0 {
			return fmt.Errorf("Scan(empty store) = %q, %v; want nothing", got, err)
		}
		return nil
	}
	view(t, s, check)
	update(t, s, func(tx kv.Txn) error {
		if err := check(tx); err != nil {
			return err
		}
		return tx.Delete([]byte("nope"))
	})
	put(t, s, "a", "1")
	update(t, s, func(tx kv.Txn) error {
		if err := tx.Delete([]byte("a")); err != nil {
			return err
		}
		return tx.Delete([]byte("a"))
	})
	view(t, s, check)
}

// scanKeys are inserted by testScanBounds; they probe the bytewise order at
// 0x00 and 0xff and the prefix boundaries.
var scanKeys = []string{"\x00", "a", "a\x00", "a/1", "a/2", "a/\xff", "a0", "b", "\xff", "\xff\xff"}

func testScanBounds(t *testing.T, h *harness) {
	s := h.store
	var kvs []string
	for _, i := range rand.New(rand.NewPCG(1, 2)).Perm(len(scanKeys)) {
		kvs = append(kvs, scanKeys[i], "v"+scanKeys[i])
	}
	put(t, s, kvs...)

	keys := func(ks ...string) []pair {
		ps := []pair{}
		for _, k := range ks {
			ps = append(ps, pair{k, "v" + k})
		}
		return ps
	}
	checks := []struct {
		start, end []byte
		want       []pair
	}{
		{nil, nil, keys(scanKeys...)},
		{[]byte("a"), []byte("b"), keys("a", "a\x00", "a/1", "a/2", "a/\xff", "a0")},
		{[]byte("a/"), kv.PrefixEnd([]byte("a/")), keys("a/1", "a/2", "a/\xff")},
		{[]byte("\xff"), kv.PrefixEnd([]byte("\xff")), keys("\xff", "\xff\xff")},
		{nil, []byte("a"), keys("\x00")},
		{[]byte("a/2"), nil, keys("a/2", "a/\xff", "a0", "b", "\xff", "\xff\xff")},
		{[]byte("a/15"), []byte("a0"), keys("a/2", "a/\xff")},
		{[]byte("a0"), []byte("a0"), keys()},
		{[]byte("b"), []byte("a"), keys()},
		{[]byte("c"), []byte("d"), keys()},
	}
	run := func(tx kv.Txn) error {
		for _, c := range checks {
			got, err := txScan(tx, c.start, c.end)
			if err != nil {
				return fmt.Errorf("Scan(%q, %q): %w", c.start, c.end, err)
			}
			if len(got) == 0 {
				got = []pair{}
			}
			if !equalPairs(got, c.want) {
				return fmt.Errorf("Scan(%q, %q) = %q; want %q", c.start, c.end, got, c.want)
			}
		}

		// Returning false stops the scan; an error stops it and is returned.
		n := 0
		err := tx.Scan(nil, nil, func(k, v []byte) (bool, error) {
			n++
			return n < 2, nil
		})
		if err != nil || n != 2 {
			return fmt.Errorf("Scan stopped after %d calls, err %v; want 2, nil", n, err)
		}
		errStop := errors.New("stop")
		n = 0
		err = tx.Scan(nil, nil, func(k, v []byte) (bool, error) {
			n++
			return true, errStop
		})
		if !errors.Is(err, errStop) || n != 1 {
			return fmt.Errorf("Scan with a failing callback: %d calls, err %v; want 1, %v", n, err, errStop)
		}
		return nil
	}
	view(t, s, run)
	update(t, s, run)
}

func testScanManyKeys(t *testing.T, h *harness) {
	s := h.store
	const n = 3000
	key := func(i int) []byte { return fmt.Appendf(nil, "k%05d", i) }
	// Insert in three interleaved Updates so that every engine merges pages
	// and levels rather than appending in order.
	for part := range 3 {
		update(t, s, func(tx kv.Txn) error {
			for i := part; i < n; i += 3 {
				if err := tx.Put(key(i), key(i)); err != nil {
					return err
				}
			}
			return nil
		})
	}
	view(t, s, func(tx kv.Txn) error {
		i := 0
		err := tx.Scan(nil, nil, func(k, v []byte) (bool, error) {
			if !bytes.Equal(k, key(i)) || !bytes.Equal(v, key(i)) {
				return false, fmt.Errorf("Scan entry %d = %q, %q; want %q", i, k, v, key(i))
			}
			i++
			return true, nil
		})
		if err == nil && i != n {
			err = fmt.Errorf("Scan visited %d keys; want %d", i, n)
		}
		return err
	})
	got := scan(t, s, key(1234), key(1240))
	if len(got) != 6 || got[0].k != string(key(1234)) || got[5].k != string(key(1239)) {
		t.Fatalf("Scan(k01234, k01240) = %q", got)
	}
}

func testViewIsReadOnly(t *testing.T, h *harness) {
	s := h.store
	put(t, s, "a", "1")
	view(t, s, func(tx kv.Txn) error {
		if err := tx.Put([]byte("b"), []byte("2")); err == nil {
			t.Error("Put inside View succeeded")
		}
		if err := tx.Delete([]byte("a")); err == nil {
			t.Error("Delete inside View succeeded")
		}
		return nil
	})
	if got, want := scan(t, s, nil, nil), []pair{{"a", "1"}}; !equalPairs(got, want) {
		t.Fatalf("after writes inside View, Scan = %q; want %q", got, want)
	}
}

func testCopies(t *testing.T, h *harness) {
	s := h.store
	key := []byte("key")
	val := []byte("value")
	update(t, s, func(tx kv.Txn) error {
		if err := tx.Put(key, val); err != nil {
			return err
		}
		// Before commit: the engine must not keep the caller's slices.
		key[0], val[0] = 'X', 'X'
		v, ok, err := txGet(tx, "key")
		if err != nil || !ok || v != "value" {
			return fmt.Errorf("Get(key) after mutating the Put slices = %q, %v, %v; want value", v, ok, err)
		}
		return nil
	})
	key[0], val[0] = 'Y', 'Y'
	if got, want := scan(t, s, nil, nil), []pair{{"key", "value"}}; !equalPairs(got, want) {
		t.Fatalf("after mutating the Put slices, Scan = %q; want %q", got, want)
	}
}

func testLargeValue(t *testing.T, h *harness) {
	s := h.store
	big := randomBytes(1<<20, 3)
	update(t, s, func(tx kv.Txn) error {
		if err := tx.Put([]byte("big"), big); err != nil {
			return err
		}
		v, ok, err := tx.Get([]byte("big"))
		if err != nil || !ok || !bytes.Equal(v, big) {
			return fmt.Errorf("Get(big) in its Update: %d bytes, %v, %v; want %d bytes", len(v), ok, err, len(big))
		}
		return tx.Put([]byte("small"), []byte("s"))
	})
	view(t, s, func(tx kv.Txn) error {
		var got [][]byte
		err := tx.Scan(nil, nil, func(k, v []byte) (bool, error) {
			got = append(got, bytes.Clone(v))
			return true, nil
		})
		if err != nil || len(got) != 2 || !bytes.Equal(got[0], big) || string(got[1]) != "s" {
			return fmt.Errorf("Scan over a 1 MiB value: %d entries, err %v", len(got), err)
		}
		return nil
	})
	put(t, s, "big", "now small")
	if v, ok := get(t, s, "big"); !ok || v != "now small" {
		t.Fatalf("Get(big) after overwrite = %d bytes, %v", len(v), ok)
	}
}

func testCancelledContext(t *testing.T, h *harness) {
	s := h.store
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := s.Update(ctx, func(tx kv.Txn) error { return tx.Put([]byte("a"), []byte("1")) })
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Update with a cancelled context = %v; want an error wrapping context.Canceled", err)
	}
	err = s.View(ctx, func(tx kv.Txn) error { return nil })
	if !errors.Is(err, context.Canceled) {
		t.Errorf("View with a cancelled context = %v; want an error wrapping context.Canceled", err)
	}
	if v, ok := get(t, s, "a"); ok {
		t.Errorf("Update with a cancelled context committed a = %q", v)
	}
}

func testClosed(t *testing.T, h *harness) {
	s := h.store
	put(t, s, "a", "1")
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	ctx := context.Background()
	if err := s.View(ctx, func(tx kv.Txn) error { return nil }); !errors.Is(err, kv.ErrClosed) {
		t.Errorf("View after Close = %v; want kv.ErrClosed", err)
	}
	if err := s.Update(ctx, func(tx kv.Txn) error { return nil }); !errors.Is(err, kv.ErrClosed) {
		t.Errorf("Update after Close = %v; want kv.ErrClosed", err)
	}
	if err := s.Close(); err != nil && !errors.Is(err, kv.ErrClosed) {
		t.Errorf("second Close = %v; want nil or kv.ErrClosed", err)
	}
}
