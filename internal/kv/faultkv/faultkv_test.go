package faultkv_test

import (
	"context"
	"errors"
	"path/filepath"
	"strconv"
	"testing"

	"tessera/internal/kv"
	"tessera/internal/kv/boltkv"
	"tessera/internal/kv/faultkv"
	"tessera/internal/kv/kvtest"
	"tessera/internal/kv/memkv"
)

// With conflicts only, the wrapper is a kv.Store like any other: the
// conformance suite passes through it, with fn running again and again.
func TestConformanceWithConflicts(t *testing.T) {
	kvtest.RunDurable(t, func(t *testing.T, dir string) kv.Store {
		s, err := boltkv.Open(filepath.Join(dir, "meta.db"), boltkv.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return faultkv.New(s, faultkv.Options{Seed: 1, Conflict: 0.5})
	})
}

// An Update that failed, by an injected failure or exhausted conflicts,
// left nothing behind; one that succeeded after injected conflicts
// applied its writes once.
func TestFailedUpdatesLeaveNothing(t *testing.T) {
	ctx := context.Background()
	s := faultkv.New(memkv.New(), faultkv.Options{Seed: 7, Conflict: 0.3, Exhaust: 0.1, Fail: 0.2})
	defer s.Close()
	committed, runs := 0, 0
	for i := range 200 {
		err := s.Update(ctx, func(tx kv.Txn) error {
			runs++
			v, _, err := tx.Get([]byte("n"))
			if err != nil {
				return err
			}
			n, _ := strconv.Atoi(string(v))
			if err := tx.Put([]byte("n"), []byte(strconv.Itoa(n+1))); err != nil {
				return err
			}
			return tx.Put([]byte("k"+strconv.Itoa(i)), []byte("x"))
		})
		switch {
		case err == nil:
			committed++
		case errors.Is(err, faultkv.ErrInjected), errors.Is(err, kv.ErrConflict):
		default:
			t.Fatalf("update %d: %v", i, err)
		}
	}
	st := s.Stats()
	if st.Updates != 200 || st.Conflicts == 0 || st.Exhausted == 0 || st.Failed == 0 {
		t.Fatalf("stats %+v: want every kind of fault over 200 updates", st)
	}
	if committed != 200-st.Exhausted-st.Failed || runs != 200+st.Conflicts {
		t.Fatalf("%d committed, %d runs with %+v", committed, runs, st)
	}
	keys := 0
	err := s.View(ctx, func(tx kv.Txn) error {
		v, _, err := tx.Get([]byte("n"))
		if err != nil {
			return err
		}
		if string(v) != strconv.Itoa(committed) {
			t.Errorf("n = %s after %d committed increments", v, committed)
		}
		return tx.Scan([]byte("k"), kv.PrefixEnd([]byte("k")), func(k, v []byte) (bool, error) {
			keys++
			return true, nil
		})
	})
	if err != nil || keys != committed {
		t.Fatalf("%d keys written by %d committed updates (%v)", keys, committed, err)
	}
	// Paused, it injects nothing.
	s.Pause(true)
	for range 20 {
		if err := s.Update(ctx, func(tx kv.Txn) error { return tx.Put([]byte("p"), []byte("1")) }); err != nil {
			t.Fatalf("paused: %v", err)
		}
	}
	if got := s.Stats(); got.Conflicts+got.Exhausted+got.Failed != st.Conflicts+st.Exhausted+st.Failed {
		t.Fatalf("paused store injected faults: %+v then %+v", st, got)
	}
}
