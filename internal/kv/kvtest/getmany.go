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
	zero := func(key string) func(tx kv.Txn, wait func()) error {
		return func(tx kv.Txn, wait func()) error {
			vs, _, err := kv.GetMany(tx, [][]byte{[]byte("x"), []byte("y")})
			if err != nil {
				return err
			}
			wait()
			if string(vs[0]) == "1" && string(vs[1]) == "1" {
				return tx.Put([]byte(key), []byte("0"))
			}
			return nil
		}
	}
	for round := range raceRounds {
		put(t, s, "x", "1", "y", "1")
		errA, errB := race(s, round, invite, zero("x"), zero("y"))
		okOrConflict(t, "zero x", errA)
		okOrConflict(t, "zero y", errB)
		x, _ := get(t, s, "x")
		y, _ := get(t, s, "y")
		if x == "0" && y == "0" {
			t.Fatalf("round %d: both Updates zeroed their key, each having read both as 1 by GetMany (write skew)", round)
		}
	}
}
