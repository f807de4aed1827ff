package kvtest

import (
	"errors"
	"fmt"
	"testing"

	"tessera/internal/kv"
)

// testPresumeAbsent: kv.PresumeAbsent answers as Get does whenever what
// follows counts: a key that is there is never reported absent by an
// Update that commits, nor by one whose fn fails on the answer, nor in a
// View; and a guess made before another Update created the key, which
// that Update's reads show it followed, is refused (an Update that each
// side saw the other miss is no serial order).
func testPresumeAbsent(t *testing.T, h *harness) {
	s := h.store
	put(t, s, "o", "1")
	answer := func(present bool) []byte {
		if present {
			return []byte("present")
		}
		return []byte("absent")
	}
	for _, c := range []struct {
		key, want  string
		writeFirst bool
	}{{"o", "present", true}, {"o", "present", false}, {"none", "absent", true}} {
		update(t, s, func(tx kv.Txn) error {
			if c.writeFirst {
				if err := tx.Put([]byte("w"), []byte("x")); err != nil {
					return err
				}
			}
			present, err := kv.PresumeAbsent(tx, []byte(c.key))
			if err != nil {
				return err
			}
			return tx.Put([]byte("res"), answer(present))
		})
		if got, _ := get(t, s, "res"); got != c.want {
			t.Fatalf("PresumeAbsent(%q) in a committed Update (written before: %v) = %s; want %s", c.key, c.writeFirst, got, c.want)
		}
	}
	view(t, s, func(tx kv.Txn) error {
		if present, err := kv.PresumeAbsent(tx, []byte("o")); err != nil || !present {
			return fmt.Errorf("PresumeAbsent(o) in a View = %v, %v; want present", present, err)
		}
		return nil
	})
	// fn fails on the answer: the failure must rest on what is there.
	errAbsent := errors.New("absent")
	err := s.Update(t.Context(), func(tx kv.Txn) error {
		if err := tx.Put([]byte("w"), []byte("y")); err != nil {
			return err
		}
		present, err := kv.PresumeAbsent(tx, []byte("o"))
		if err == nil && !present {
			err = errAbsent
		}
		return err
	})
	if err != nil {
		t.Fatalf("an Update that fails when o is absent failed with o there: %v", err)
	}
	// The race: a presumes o absent and records its answer; b reads a's
	// answer and creates o. Serially either a saw o, or b saw a's answer.
	for round := range raceRounds {
		update(t, s, func(tx kv.Txn) error {
			for _, k := range []string{"o", "res", "bres"} {
				if err := tx.Delete([]byte(k)); err != nil {
					return err
				}
			}
			return nil
		})
		a := func(tx kv.Txn, wait func()) error {
			if err := tx.Put([]byte("w"), []byte("z")); err != nil {
				return err
			}
			present, err := kv.PresumeAbsent(tx, []byte("o"))
			if err != nil {
				return err
			}
			wait()
			return tx.Put([]byte("res"), answer(present))
		}
		b := func(tx kv.Txn, wait func()) error {
			res, ok, err := txGet(tx, "res")
			if err != nil {
				return err
			}
			wait()
			if !ok {
				res = "none"
			}
			if err := tx.Put([]byte("o"), []byte("1")); err != nil {
				return err
			}
			return tx.Put([]byte("bres"), []byte(res))
		}
		errA, errB := race(s, round, invite, a, b)
		okA := okOrConflict(t, "presume", errA)
		okB := okOrConflict(t, "create", errB)
		res, _ := get(t, s, "res")
		bres, _ := get(t, s, "bres")
		if okA && okB && res == "absent" && bres == "none" {
			t.Fatalf("round %d: the Update that presumed o absent and the one that created o both committed, neither seeing the other", round)
		}
	}
}
