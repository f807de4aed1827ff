package kvtest

import (
	"fmt"
	"testing"

	"tessera/internal/kv"
)

// testGetMany: kv.GetMany reads as Get does, key by key (the engine's
// MultiGetter or the fallback): the snapshot, the transaction's own
// writes and deletes, absent keys, repeated keys; and what it read counts
// as read for conflicts (write skew through GetMany is refused).
func testGetMany(t *testing.T, h *harness) {
	s := h.store
	put(t, s, "a", "1", "b", "2", "c", "")
	keys := [][]byte{[]byte("a"), []byte("b"), []byte("c"), []byte("d"), []byte("z"), []byte("a")}
	check := func(tx kv.Txn, want []string, wantOK []bool) error {
		vs, oks, err := kv.GetMany(tx, keys)
		if err != nil {
			return err
		}
		if len(vs) != len(keys) || len(oks) != len(keys) {
			return fmt.Errorf("GetMany of %d keys: %d values, %d flags", len(keys), len(vs), len(oks))
		}
		for i := range keys {
			if string(vs[i]) != want[i] || oks[i] != wantOK[i] || (!oks[i] && vs[i] != nil) {
				return fmt.Errorf("GetMany: key %q = %q, %v; want %q, %v", keys[i], vs[i], oks[i], want[i], wantOK[i])
			}
		}
		return nil
	}
	view(t, s, func(tx kv.Txn) error {
		return check(tx, []string{"1", "2", "", "", "", "1"}, []bool{true, true, true, false, false, true})
	})
	update(t, s, func(tx kv.Txn) error {
		if err := tx.Delete([]byte("b")); err != nil {
			return err
		}
		if err := tx.Put([]byte("d"), []byte("4")); err != nil {
			return err
		}
		return check(tx, []string{"1", "", "", "4", "", "1"}, []bool{true, false, true, true, false, true})
	})
	// An Update that read first by Get, then by GetMany, sees one snapshot.
	update(t, s, func(tx kv.Txn) error {
		if _, _, err := tx.Get([]byte("a")); err != nil {
			return err
		}
		return check(tx, []string{"1", "", "", "4", "", "1"}, []bool{true, false, true, true, false, true})
	})
	// Write skew with the reads made by GetMany.
	writeSkewBy(t, s, invite, " by GetMany", func(tx kv.Txn) (x, y string, err error) {
		vs, _, err := kv.GetMany(tx, [][]byte{[]byte("x"), []byte("y")})
		if err != nil {
			return "", "", err
		}
		return string(vs[0]), string(vs[1]), nil
	})
}

// testPrefetch: kv.Prefetch changes nothing a read returns (own writes
// and deletes win, absent keys stay absent, a Scan inside a prefetched
// range sees the snapshot merged with the writes), and what is read
// through a prefetch counts for conflicts: the rmdir-against-create
// phantom with the emptiness scan prefetched, and a deletion inside a
// prefetched, scanned range, are both refused.
func testPrefetch(t *testing.T, h *harness) {
	s := h.store
	put(t, s, "a", "1", "p/1", "x", "p/2", "y", "q", "z")
	prefetch := func(tx kv.Txn) error {
		return kv.Prefetch(tx, [][]byte{[]byte("a"), []byte("b"), []byte("p/2")},
			[]kv.Range{{Start: []byte("p/"), End: kv.PrefixEnd([]byte("p/"))}, {Start: []byte("q")}})
	}
	view(t, s, func(tx kv.Txn) error {
		if err := prefetch(tx); err != nil {
			return err
		}
		if v, ok, err := txGet(tx, "a"); err != nil || !ok || v != "1" {
			return fmt.Errorf("Get(a) after Prefetch = %q, %v, %v; want 1", v, ok, err)
		}
		if v, ok, err := txGet(tx, "b"); err != nil || ok {
			return fmt.Errorf("Get(b) after Prefetch = %q, %v, %v; want absent", v, ok, err)
		}
		got, err := txScan(tx, []byte("p/"), kv.PrefixEnd([]byte("p/")))
		if err != nil || !equalPairs(got, []pair{{"p/1", "x"}, {"p/2", "y"}}) {
			return fmt.Errorf("Scan(p/) after Prefetch = %q, %v", got, err)
		}
		got, err = txScan(tx, []byte("p/2"), nil)
		if err != nil || !equalPairs(got, []pair{{"p/2", "y"}, {"q", "z"}}) {
			return fmt.Errorf("Scan(p/2..) after Prefetch = %q, %v", got, err)
		}
		return nil
	})
	update(t, s, func(tx kv.Txn) error {
		if err := tx.Delete([]byte("p/1")); err != nil {
			return err
		}
		if err := tx.Put([]byte("p/3"), []byte("w")); err != nil {
			return err
		}
		if err := tx.Put([]byte("b"), []byte("2")); err != nil {
			return err
		}
		if err := prefetch(tx); err != nil {
			return err
		}
		if v, ok, err := txGet(tx, "b"); err != nil || !ok || v != "2" {
			return fmt.Errorf("Get(b) written, then prefetched = %q, %v, %v; want 2", v, ok, err)
		}
		got, err := txScan(tx, []byte("p/"), kv.PrefixEnd([]byte("p/")))
		if err != nil || !equalPairs(got, []pair{{"p/2", "y"}, {"p/3", "w"}}) {
			return fmt.Errorf("Scan(p/) with own writes after Prefetch = %q, %v", got, err)
		}
		return tx.Delete([]byte("p/3"))
	})
	// The phantom, the emptiness scan prefetched.
	phantomWith(t, s, invite, " with its scan prefetched", func(tx kv.Txn) error {
		prefix := []byte("d/")
		return kv.Prefetch(tx, [][]byte{[]byte("dir")}, []kv.Range{{Start: prefix, End: kv.PrefixEnd(prefix)}})
	})
	// A deletion inside a prefetched, scanned range: counting the range
	// and recording the count must not miss it.
	for round := range raceRounds {
		put(t, s, "r/1", "x", "r/2", "x", "count", "2")
		count := func(tx kv.Txn, wait func()) error {
			if err := kv.Prefetch(tx, nil, []kv.Range{{Start: []byte("r/"), End: kv.PrefixEnd([]byte("r/"))}}); err != nil {
				return err
			}
			ents, err := txScan(tx, []byte("r/"), kv.PrefixEnd([]byte("r/")))
			if err != nil {
				return err
			}
			wait()
			return tx.Put([]byte("count"), fmt.Appendf(nil, "%d", len(ents)))
		}
		drop := func(tx kv.Txn, wait func()) error {
			c, _, err := txGet(tx, "count")
			if err != nil {
				return err
			}
			wait()
			if err := tx.Delete([]byte("r/2")); err != nil {
				return err
			}
			n := 0
			fmt.Sscan(c, &n)
			return tx.Put([]byte("count"), fmt.Appendf(nil, "%d", n-1))
		}
		errA, errB := race(s, round, invite, count, drop)
		okOrConflict(t, "count", errA)
		okOrConflict(t, "drop", errB)
		c, _ := get(t, s, "count")
		if n := len(scan(t, s, []byte("r/"), kv.PrefixEnd([]byte("r/")))); c != fmt.Sprint(n) {
			t.Fatalf("round %d: count %s, %d keys: a deletion in a prefetched, scanned range was missed", round, c, n)
		}
	}
}
