package kvtest

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"tessera/internal/kv"
)

// This file holds the cases for what cluster.go in package kv adds: the
// change feed (kv.Watcher) and elections (kv.Elector). A store without one
// skips its cases.

// hangGuard bounds how long a case waits for something that must happen,
// so that a broken engine fails instead of hanging; it is no speed
// requirement.
const hangGuard = 2 * time.Minute

func watcher(t *testing.T, h *harness) kv.Watcher {
	w, ok := h.store.(kv.Watcher)
	if !ok {
		t.Skipf("%T is no kv.Watcher", h.store)
	}
	return w
}

// next receives one batch, failing when the channel closes or nothing
// comes.
func next(t *testing.T, ch <-chan []kv.Change) []kv.Change {
	t.Helper()
	select {
	case b, ok := <-ch:
		if !ok {
			t.Fatal("watch channel closed early")
		}
		if len(b) == 0 {
			t.Fatal("watch delivered an empty batch")
		}
		for _, c := range b[1:] {
			if c.Rev != b[0].Rev {
				t.Fatalf("one batch holds revisions %d and %d", b[0].Rev, c.Rev)
			}
		}
		sort.Slice(b, func(i, j int) bool { return bytes.Compare(b[i].Key, b[j].Key) < 0 })
		return b
	case <-time.After(hangGuard):
		t.Fatal("no watch batch arrived")
		return nil
	}
}

// show renders a batch without revisions, to compare.
func show(b []kv.Change) string {
	var s string
	for _, c := range b {
		if c.Deleted {
			s += fmt.Sprintf("-%s ", c.Key)
		} else {
			s += fmt.Sprintf("%s=%s ", c.Key, c.Value)
		}
	}
	return s
}

func expectBatch(t *testing.T, ch <-chan []kv.Change, want string) []kv.Change {
	t.Helper()
	b := next(t, ch)
	if got := show(b); got != want {
		t.Fatalf("watch batch %q, want %q", got, want)
	}
	return b
}

// testWatchCommits: every commit under the prefix arrives once, in commit
// order, as one batch, with its net writes; nothing outside the prefix does.
func testWatchCommits(t *testing.T, h *harness) {
	w := watcher(t, h)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := w.Watch(ctx, []byte("w/"), 0)
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	put(t, h.store, "w/a", "1", "w/b", "2")
	put(t, h.store, "x/c", "3")
	update(t, h.store, func(tx kv.Txn) error {
		if err := tx.Delete([]byte("w/a")); err != nil {
			return err
		}
		return tx.Delete([]byte("w/absent"))
	})
	put(t, h.store, "w/b", "4", "x/d", "5")
	b1 := expectBatch(t, ch, "w/a=1 w/b=2 ")
	b2 := expectBatch(t, ch, "-w/a ")
	b3 := expectBatch(t, ch, "w/b=4 ")
	if !(b1[0].Rev < b2[0].Rev && b2[0].Rev < b3[0].Rev) {
		t.Fatalf("revisions %d, %d, %d do not grow with commit order", b1[0].Rev, b2[0].Rev, b3[0].Rev)
	}
	cancel()
	for range 1000 {
		if _, ok := <-ch; !ok {
			return
		}
	}
	t.Fatal("watch channel still open after its context ended")
}

// testWatchFrom: a watch from a revision seen earlier delivers exactly the
// commits after it.
func testWatchFrom(t *testing.T, h *harness) {
	w := watcher(t, h)
	ctx, cancel := context.WithCancel(context.Background())
	ch, err := w.Watch(ctx, []byte("f/"), 0)
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	put(t, h.store, "f/1", "a")
	put(t, h.store, "f/2", "b")
	r1 := expectBatch(t, ch, "f/1=a ")[0].Rev
	r2 := expectBatch(t, ch, "f/2=b ")[0].Rev
	cancel()

	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	ch, err = w.Watch(ctx, []byte("f/"), r1)
	if err != nil {
		t.Fatalf("Watch from %d: %v", r1, err)
	}
	if b := expectBatch(t, ch, "f/2=b "); b[0].Rev != r2 {
		t.Fatalf("replayed revision %d, want %d", b[0].Rev, r2)
	}
	put(t, h.store, "f/3", "c")
	expectBatch(t, ch, "f/3=c ")
}

func elector(t *testing.T, h *harness) kv.Elector {
	e, ok := h.store.(kv.Elector)
	if !ok {
		t.Skipf("%T is no kv.Elector", h.store)
	}
	return e
}

// testElection: one leader at a time; a waiting candidate wins only after
// the leader resigns, and a candidate whose context ends gives up.
func testElection(t *testing.T, h *harness) {
	e := elector(t, h)
	ctx := context.Background()
	a, err := e.Campaign(ctx, "lead", "a")
	if err != nil {
		t.Fatalf("Campaign a: %v", err)
	}
	var resigned atomic.Bool
	type result struct {
		l   kv.Leadership
		err error
	}
	bc := make(chan result, 1)
	go func() {
		l, err := e.Campaign(ctx, "lead", "b")
		if err == nil && !resigned.Load() {
			err = fmt.Errorf("b won while a still led")
		}
		bc <- result{l, err}
	}()

	// A candidate that gives up returns its context's error.
	cctx, ccancel := context.WithCancel(ctx)
	cc := make(chan error, 1)
	go func() {
		l, err := e.Campaign(cctx, "lead", "c")
		if err == nil {
			_ = l.Resign(ctx)
			err = fmt.Errorf("c won although a led and c's context ended")
		} else if cctx.Err() == nil {
			err = fmt.Errorf("c failed before its context ended: %w", err)
		} else {
			err = nil
		}
		cc <- err
	}()
	ccancel()
	select {
	case err := <-cc:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(hangGuard):
		t.Fatal("a cancelled Campaign did not return")
	}

	// Another election is independent.
	o, err := e.Campaign(ctx, "other", "b")
	if err != nil {
		t.Fatalf("Campaign other: %v", err)
	}
	resigned.Store(true)
	if err := a.Resign(ctx); err != nil {
		t.Fatalf("Resign a: %v", err)
	}
	select {
	case <-a.Done():
	case <-time.After(hangGuard):
		t.Fatal("Done did not close after Resign")
	}
	var b result
	select {
	case b = <-bc:
	case <-time.After(hangGuard):
		t.Fatal("b did not win after a resigned")
	}
	if b.err != nil {
		t.Fatal(b.err)
	}
	select {
	case <-b.l.Done():
		t.Fatal("b's leadership is done before it resigned")
	default:
	}
	for _, l := range []kv.Leadership{b.l, o} {
		if err := l.Resign(ctx); err != nil {
			t.Fatalf("Resign: %v", err)
		}
	}
}
