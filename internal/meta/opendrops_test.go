package meta

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"tessera/internal/kv"
	"tessera/internal/kv/memkv"
)

// gatedStore counts the Updates that delete open records and, while armed,
// holds the first of them until released: the test then knows a batch is
// in flight while it queues more releases.
type gatedStore struct {
	kv.Store
	kv.Watcher
	armed   atomic.Bool
	entered chan struct{}
	release chan struct{}
	drops   atomic.Int64 // Updates that deleted an "O" key
}

func (g *gatedStore) Update(ctx context.Context, fn func(kv.Txn) error) error {
	dropped := false
	err := g.Store.Update(ctx, func(tx kv.Txn) error {
		dropped = false
		return fn(&dropSpy{Txn: tx, seen: &dropped})
	})
	if dropped {
		g.drops.Add(1)
		if g.armed.CompareAndSwap(true, false) {
			close(g.entered)
			<-g.release
		}
	}
	return err
}

type dropSpy struct {
	kv.Txn
	seen *bool
}

func (d *dropSpy) Delete(k []byte) error {
	if len(k) > 0 && k[0] == pfxOpen {
		*d.seen = true
	}
	return d.Txn.Delete(k)
}

// TestReleasesDropOpenRecordsInBatches: releases do not wait for the
// deletion of their open records; the drainer gathers them for its window
// and deletes them together: 20 releases, 1 transaction (were 20, one per
// release), and while a batch travels the next releases queue behind it.
// An inode opened again before its batch keeps its record. Fails with
// ReleaseOpen calling dropOpen (a transaction per release, 21).
func TestReleasesDropOpenRecordsInBatches(t *testing.T) {
	ctx := context.Background()
	inner := memkv.New()
	defer inner.Close()
	g := &gatedStore{Store: inner, Watcher: inner, entered: make(chan struct{}), release: make(chan struct{})}
	// The drainer's window never ends by itself: FlushOpenDrops ends it.
	never := func(time.Duration) <-chan time.Time { return nil }
	s, err := New(g, Options{Shared: true, After: never})
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.OpenSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	api := s.WithSession(info.ID)
	var inos []Ino
	for i := range 42 {
		in, err := api.Create(ctx, CreateReq{Parent: RootIno, Name: fmt.Sprintf("f%02d", i), Mode: 0o644, Excl: true, Open: true})
		if err != nil {
			t.Fatal(err)
		}
		inos = append(inos, in.Ino)
	}
	release := func(inos []Ino) {
		t.Helper()
		for _, ino := range inos {
			if err := api.ReleaseOpen(ctx, ino); err != nil {
				t.Fatal(err)
			}
		}
	}
	release(inos[:21])
	if n := g.drops.Load(); n != 0 {
		t.Errorf("releases in the drainer's window deleted open records in %d transactions already; want none yet", n)
	}
	// Released and opened again before its batch: the record stays.
	if _, err := api.HoldOpen(ctx, inos[20]); err != nil {
		t.Fatal(err)
	}
	FlushOpenDrops(s)
	if n := g.drops.Load(); n != 1 {
		t.Errorf("20 releases in one window deleted their open records in %d transactions; want 1", n)
	}
	// A batch in flight: the releases meanwhile go in the next one.
	g.armed.Store(true)
	first := make(chan error, 1)
	go func() { first <- api.ReleaseOpen(ctx, inos[21]) }()
	go FlushOpenDrops(s)
	<-g.entered
	release(inos[22:])
	close(g.release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	FlushOpenDrops(s)
	if n := g.drops.Load(); n != 3 {
		t.Errorf("a batch in flight and 20 releases behind it: %d transactions in all; want 3", n)
	}
	for i, ino := range inos {
		_, ok, err := getKey(inner, openRecKey(ino, s.ID()))
		if err != nil {
			t.Fatal(err)
		}
		if want := i == 20; ok != want {
			t.Errorf("open record of inode %d (file %d) there: %v; want %v", ino, i, ok, want)
		}
	}
}

func getKey(st kv.Store, k []byte) (v []byte, ok bool, err error) {
	err = st.View(context.Background(), func(tx kv.Txn) error {
		v, ok, err = tx.Get(k)
		return err
	})
	return v, ok, err
}
