package kvtest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"tessera/internal/kv"
)

// Races between two Updates whose reads and writes overlap. Each case
// holds the first transaction open after its reads until the second has
// made its own reads (or, on an engine that runs Updates one at a time,
// has at least been started and been given a moment): an engine that
// lets both run must make one of them conflict and run again (or fail
// with kv.ErrConflict); one that runs them one after the other
// serializes them. Either way the outcome must be one some serial order
// gives. The moment given is only an invitation to interleave: no
// outcome depends on how long it is.

// raceRounds is how many times each race is run, alternating which side
// holds its transaction open.
const raceRounds = 10

// invite is the longest a transaction holding its reads waits for the
// other one's reads: not longer, since an engine that runs one Update at a
// time starts the other only once the holder is done.
const invite = 20 * time.Millisecond

// race runs a and b as concurrent Updates; hold is called by the holder
// (a on even rounds, b on odd ones) after its reads and waits up to wait
// for the other's reads; the other calls its own after its reads. It
// returns the two Updates' errors.
func race(s kv.Store, round int, wait time.Duration, a, b func(tx kv.Txn, hold func()) error) (errA, errB error) {
	held := make(chan struct{})
	peerRead := make(chan struct{})
	var heldOnce, peerOnce sync.Once
	hold := func() {
		heldOnce.Do(func() { close(held) })
		select {
		case <-peerRead:
		case <-time.After(wait):
		}
	}
	peer := func() { peerOnce.Do(func() { close(peerRead) }) }
	first, second := a, b
	if round%2 == 1 {
		first, second = b, a
	}
	var errFirst, errSecond error
	var wg sync.WaitGroup
	wg.Go(func() {
		errFirst = s.Update(context.Background(), func(tx kv.Txn) error { return first(tx, hold) })
		// An Update that failed before its hold must still let the other
		// start, or the race waits for ever.
		heldOnce.Do(func() { close(held) })
	})
	wg.Go(func() {
		<-held
		errSecond = s.Update(context.Background(), func(tx kv.Txn) error { return second(tx, peer) })
	})
	wg.Wait()
	if round%2 == 1 {
		return errSecond, errFirst
	}
	return errFirst, errSecond
}

// okOrConflict reports an Update error other than a conflict.
func okOrConflict(t testing.TB, what string, err error) bool {
	t.Helper()
	if err != nil && !errors.Is(err, kv.ErrConflict) {
		t.Fatalf("%s: %v; want nil or kv.ErrConflict", what, err)
	}
	return err == nil
}

func atoi(v string, ok bool) int {
	n, _ := strconv.Atoi(v)
	if !ok {
		return 0
	}
	return n
}

// testRacingIncrements: two Updates read the same key and both write it,
// one plus its read: every Update that returned nil counts (no lost
// update).
func testRacingIncrements(t *testing.T, h *harness) { racingIncrements(t, h.store, invite) }

func racingIncrements(t testing.TB, s kv.Store, wait time.Duration) {
	incr := func(tx kv.Txn, wait func()) error {
		v, ok, err := txGet(tx, "n")
		if err != nil {
			return err
		}
		wait()
		return tx.Put([]byte("n"), []byte(strconv.Itoa(atoi(v, ok)+1)))
	}
	want := 0
	for round := range raceRounds {
		errA, errB := race(s, round, wait, incr, incr)
		for _, err := range []error{errA, errB} {
			if okOrConflict(t, "racing increment", err) {
				want++
			}
		}
		if got := atoi(get(t, s, "n")); got != want {
			t.Fatalf("round %d: n = %d after %d committed increments: an update was lost", round, got, want)
		}
	}
}

// testWriteSkew: x and y start at 1; each Update zeroes one of them if
// both are 1. Serially the second sees the first's write and does
// nothing; under snapshot isolation both commit and x+y drops to 0.
func testWriteSkew(t *testing.T, h *harness) { writeSkew(t, h.store, invite) }

func writeSkew(t testing.TB, s kv.Store, wait time.Duration) {
	writeSkewBy(t, s, wait, "", func(tx kv.Txn) (x, y string, err error) {
		if x, _, err = txGet(tx, "x"); err != nil {
			return "", "", err
		}
		y, _, err = txGet(tx, "y")
		return x, y, err
	})
}

// writeSkewBy is the write-skew race with x and y read by read (by Get,
// by GetMany, ...); how names the way in the failure.
func writeSkewBy(t testing.TB, s kv.Store, wait time.Duration, how string, read func(tx kv.Txn) (x, y string, err error)) {
	zero := func(key string) func(tx kv.Txn, wait func()) error {
		return func(tx kv.Txn, wait func()) error {
			x, y, err := read(tx)
			if err != nil {
				return err
			}
			wait()
			if x == "1" && y == "1" {
				return tx.Put([]byte(key), []byte("0"))
			}
			return nil
		}
	}
	for round := range raceRounds {
		put(t, s, "x", "1", "y", "1")
		errA, errB := race(s, round, wait, zero("x"), zero("y"))
		okOrConflict(t, "zero x", errA)
		okOrConflict(t, "zero y", errB)
		x, _ := get(t, s, "x")
		y, _ := get(t, s, "y")
		if x == "0" && y == "0" {
			t.Fatalf("round %d: both Updates zeroed their key, each having read both as 1%s (write skew: not serializable)", round, how)
		}
	}
}

// testPhantom is rmdir against create: one Update scans the prefix "d/"
// (a directory's entries), finds it empty and deletes "dir" (the
// directory); the other reads "dir", finds it and inserts "d/<name>" (an
// entry). Serially one of them sees the other: the store must never end
// with an entry under a directory that is gone. An engine that checks
// only the keys a transaction read, not the ranges it scanned, lets both
// commit.
func testPhantom(t *testing.T, h *harness) { phantom(t, h.store, invite) }

func phantom(t testing.TB, s kv.Store, wait time.Duration) { phantomWith(t, s, wait, "", nil) }

// phantomWith is the rmdir-against-create race; the rmdir calls first
// (when not nil) before its reads (a Prefetch of them, ...); how names
// it in the failure.
func phantomWith(t testing.TB, s kv.Store, wait time.Duration, how string, first func(tx kv.Txn) error) {
	prefix := []byte("d/")
	rmdir := func(tx kv.Txn, wait func()) error {
		if first != nil {
			if err := first(tx); err != nil {
				return err
			}
		}
		if _, ok, err := txGet(tx, "dir"); err != nil || !ok {
			return err
		}
		ents, err := txScan(tx, prefix, kv.PrefixEnd(prefix))
		if err != nil {
			return err
		}
		wait()
		if len(ents) > 0 {
			return nil // ENOTEMPTY
		}
		return tx.Delete([]byte("dir"))
	}
	for round := range raceRounds {
		name := fmt.Sprintf("d/e%02d", round)
		create := func(tx kv.Txn, wait func()) error {
			_, ok, err := txGet(tx, "dir")
			if err != nil {
				return err
			}
			wait()
			if !ok {
				return nil // ENOENT
			}
			return tx.Put([]byte(name), []byte("x"))
		}
		update(t, s, func(tx kv.Txn) error {
			// A fresh, empty directory for this round.
			ents, err := txScan(tx, prefix, kv.PrefixEnd(prefix))
			if err != nil {
				return err
			}
			for _, e := range ents {
				if err := tx.Delete([]byte(e.k)); err != nil {
					return err
				}
			}
			return tx.Put([]byte("dir"), []byte("1"))
		})
		errA, errB := race(s, round, wait, rmdir, create)
		okOrConflict(t, "rmdir", errA)
		okOrConflict(t, "create", errB)
		_, dir := get(t, s, "dir")
		ents := scan(t, s, prefix, kv.PrefixEnd(prefix))
		if !dir && len(ents) > 0 {
			t.Fatalf("round %d: entries %v under a directory that rmdir removed%s: the create and the rmdir's emptiness scan both committed (a phantom)", round, ents, how)
		}
		if dir && len(ents) == 0 && errA == nil && errB == nil {
			t.Fatalf("round %d: both committed, yet the directory is there and empty", round)
		}
	}
}
