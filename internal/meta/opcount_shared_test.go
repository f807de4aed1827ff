package meta

import (
	"context"
	"fmt"
	"syscall"
	"testing"

	"tessera/internal/kv"
	"tessera/internal/kv/memkv"
)

// TestOpCountsShared is TestOpCounts for a Service of a shared store (meta
// over etcd) called through a session, as a mount calls it: a create that
// opens the new file, its release, a stat and a lookup of a name not
// seen before (each earns the session a lease, hence a lease record).
func TestOpCountsShared(t *testing.T) {
	ctx := context.Background()
	inner := memkv.New()
	defer inner.Close()
	counter := &opCounter{Store: inner, onlyMarked: true}
	store := struct {
		*opCounter
		kv.Watcher
	}{counter, inner}
	s, err := New(store, Options{Shared: true})
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- s.ServeShared(sctx) }()
	defer func() {
		cancel()
		if err := <-served; err != nil {
			t.Error(err)
		}
	}()
	info, err := s.OpenSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	api := s.WithSession(info.ID)
	d, err := api.Create(ctx, CreateReq{Parent: RootIno, Name: "d", Mode: syscall.S_IFDIR | 0755})
	if err != nil {
		t.Fatal(err)
	}
	// The files are made through the counting transactions, which read
	// several keys at once as etcd's do, so that their names leave hints
	// (hints.go) as they do on etcd; counts are taken per case below.
	mctx := context.WithValue(ctx, countMark{}, true)
	for i := range 20 {
		if _, err := s.Create(mctx, CreateReq{Parent: d.Ino, Name: fmt.Sprintf("f%03d", i), Mode: 0644, Excl: true}); err != nil {
			t.Fatal(err)
		}
	}
	// Only the measured calls count: the service's own upkeep (ServeShared)
	// may run a transaction in the middle of one (a CI run counted 4
	// updates for a lookup so).
	ctx = context.WithValue(ctx, countMark{}, true)
	var made Inode
	cases := []struct {
		name string
		op   func() error
		max  opCounts
	}{
		// One Update: the open record and the lease record go in the
		// transaction that creates the inode (were two Updates of their
		// own and a View).
		{"create and open", func() (err error) {
			made, err = api.Create(ctx, CreateReq{Parent: d.Ino, Name: "new", Mode: 0644, Excl: true, Open: true})
			return err
		}, opCounts{updates: 1, prefetches: 1}},
		// The create's lease record is noted: no record to write.
		{"getattr of the new file", func() error {
			_, err := api.GetAttr(ctx, made.Ino)
			return err
		}, opCounts{views: 1, gets: 1}},
		// Nothing: the open record goes in a later batch of drops
		// (opendrops.go), whose commit checks that the file is no
		// orphan (kv.PresumeAbsent). Was one Update of its own.
		{"release", func() error { return api.ReleaseOpen(ctx, made.Ino) }, opCounts{}},
		// A name not seen before: the read, the lease record, the read
		// again (the record must precede the read that grants).
		{"lookup", func() error {
			_, err := api.Lookup(ctx, d.Ino, "f007")
			return err
		}, opCounts{views: 2, updates: 1, getManys: 2}},
		{"lookup again", func() error {
			_, err := api.Lookup(ctx, d.Ino, "f007")
			return err
		}, opCounts{views: 1, getManys: 1}},
		{"getattr", func() error {
			_, err := api.GetAttr(ctx, d.Ino+3)
			return err
		}, opCounts{views: 1, updates: 1, gets: 1}},
		// An unlink that deletes the file: one Prefetch of the
		// directory, the name and the hooks' ranges, one of the inode
		// and its records, then the commit.
		{"unlink", func() error {
			_, err := api.Unlink(ctx, d.Ino, "new", made.Ino)
			return err
		}, opCounts{updates: 1, prefetches: 2}},
	}
	for _, c := range cases {
		before := counter.snapshot()
		if err := c.op(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got := counter.snapshot().minus(before)
		t.Logf("%s: %+v", c.name, got)
		if !got.within(c.max) {
			t.Errorf("%s cost %+v; want at most %+v", c.name, got, c.max)
		}
	}
}
