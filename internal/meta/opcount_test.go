package meta

import (
	"context"
	"fmt"
	"sync/atomic"
	"syscall"
	"testing"

	"tessera/internal/kv"
	"tessera/internal/kv/memkv"
)

// TestOpCounts pins what a create, lookup, stat and listing cost the store
// in calls: on etcd every Get, Scan page, GetMany and commit is a round
// trip, so these counts are the operation's round trips (issue 29). A
// listing with attributes reads the page's inodes in one GetMany, not one
// Get per entry; counts, not times, so a busy machine cannot fail it.
func TestOpCounts(t *testing.T) {
	ctx := context.Background()
	inner := memkv.New()
	defer inner.Close()
	store := &opCounter{Store: inner}
	s, err := New(store, Options{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := s.Create(ctx, CreateReq{Parent: RootIno, Name: "d", Mode: syscall.S_IFDIR | 0755})
	if err != nil {
		t.Fatal(err)
	}
	const n = 200
	for i := range n {
		if _, err := s.Create(ctx, CreateReq{Parent: d.Ino, Name: fmt.Sprintf("f%03d", i), Mode: 0644, Excl: true}); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name string
		op   func() error
		max  opCounts
	}{
		// A create: one Update; one Prefetch reads the parent, the
		// name, a usage counter's shard and the two (empty) ranges its
		// hooks scan (filesets, quotas): one round trip, then the
		// commit.
		{"create", func() error {
			_, err := s.Create(ctx, CreateReq{Parent: d.Ino, Name: "new", Mode: 0644, Excl: true})
			return err
		}, opCounts{updates: 1, prefetches: 1}},
		{"lookup", func() error {
			_, err := s.Lookup(ctx, d.Ino, "f007")
			return err
		}, opCounts{views: 1, getManys: 1}}, // the directory, the name and the inode it last named (hints.go)
		{"lookup of a missing name", func() error {
			if _, err := s.Lookup(ctx, d.Ino, "nope"); err == nil {
				return fmt.Errorf("lookup of a missing name succeeded")
			}
			return nil
		}, opCounts{views: 1, getManys: 1}},
		{"getattr", func() error {
			_, err := s.GetAttr(ctx, d.Ino+7)
			return err
		}, opCounts{views: 1, gets: 1}},
		// ls -l asks for an attribute of every file: the inode and the
		// attribute in one read.
		{"getxattr of a missing attribute", func() error {
			if _, err := s.GetXattr(ctx, d.Ino+7, "user.nope"); err == nil {
				return fmt.Errorf("getxattr of a missing attribute succeeded")
			}
			return nil
		}, opCounts{views: 1, getManys: 1}},
		// A page of n entries with attributes: the directory, one scan,
		// one GetMany.
		{"readdir plus", func() error {
			ents, _, err := s.ReadDir(ctx, d.Ino, "", n+10, true)
			if err == nil && (len(ents) != n+1 || ents[0].Inode == nil) {
				err = fmt.Errorf("listed %d entries (want %d) with attributes %v", len(ents), n+1, ents[0].Inode != nil)
			}
			return err
		}, opCounts{views: 1, gets: 1, scans: 1, getManys: 1}},
		{"readdir", func() error {
			_, _, err := s.ReadDir(ctx, d.Ino, "", n+10, false)
			return err
		}, opCounts{views: 1, gets: 1, scans: 1}},
	}
	for _, c := range cases {
		before := store.snapshot()
		if err := c.op(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got := store.snapshot().minus(before)
		t.Logf("%s: %+v", c.name, got)
		if !got.within(c.max) {
			t.Errorf("%s cost %+v; want at most %+v", c.name, got, c.max)
		}
	}
}

// opCounts are store calls: transactions and the reads in them.
type opCounts struct {
	views, updates, gets, scans, getManys, prefetches int64
}

func (a opCounts) minus(b opCounts) opCounts {
	return opCounts{a.views - b.views, a.updates - b.updates, a.gets - b.gets, a.scans - b.scans, a.getManys - b.getManys,
		a.prefetches - b.prefetches}
}

func (a opCounts) within(b opCounts) bool {
	return a.views <= b.views && a.updates <= b.updates && a.gets <= b.gets && a.scans <= b.scans &&
		a.getManys <= b.getManys && a.prefetches <= b.prefetches
}

// opCounter counts the calls made on a store, counting kv.GetMany and
// kv.Prefetch as one call each (an engine that reads several keys in one
// round trip) and reads answered by a Prefetch as none. With onlyMarked,
// it counts only the transactions whose context carries countMark (the
// test's own calls), not those of the service's background work (lease
// and session upkeep), which a busy machine may run in the middle of a
// measured call.
type opCounter struct {
	kv.Store
	onlyMarked                                        bool
	views, updates, gets, scans, getManys, prefetches atomic.Int64
}

// countMark marks a context whose transactions an onlyMarked opCounter
// counts.
type countMark struct{}

func (c *opCounter) counts(ctx context.Context) bool {
	return !c.onlyMarked || ctx.Value(countMark{}) != nil
}

func (c *opCounter) snapshot() opCounts {
	return opCounts{c.views.Load(), c.updates.Load(), c.gets.Load(), c.scans.Load(), c.getManys.Load(), c.prefetches.Load()}
}

func (c *opCounter) View(ctx context.Context, fn func(kv.Txn) error) error {
	if !c.counts(ctx) {
		return c.Store.View(ctx, fn)
	}
	c.views.Add(1)
	return c.Store.View(ctx, func(tx kv.Txn) error { return fn(&opTxn{Txn: tx, c: c}) })
}

func (c *opCounter) Update(ctx context.Context, fn func(kv.Txn) error) error {
	if !c.counts(ctx) {
		return c.Store.Update(ctx, fn)
	}
	c.updates.Add(1)
	return c.Store.Update(ctx, func(tx kv.Txn) error { return fn(&opTxn{Txn: tx, c: c}) })
}

// opTxn counts a transaction's reads as an engine with kv.GetMany and
// kv.Prefetch makes them: a read of what a Prefetch read costs nothing.
type opTxn struct {
	kv.Txn
	c       *opCounter
	pkeys   map[string]bool
	pranges []kv.Range
}

func (t *opTxn) Get(key []byte) ([]byte, bool, error) {
	if !t.pkeys[string(key)] {
		t.c.gets.Add(1)
	}
	return t.Txn.Get(key)
}

func (t *opTxn) Scan(start, end []byte, fn func(k, v []byte) (bool, error)) error {
	if !t.prefetched(start, end) {
		t.c.scans.Add(1)
	}
	return t.Txn.Scan(start, end, fn)
}

func (t *opTxn) GetMany(keys [][]byte) ([][]byte, []bool, error) {
	for _, k := range keys {
		if !t.pkeys[string(k)] {
			t.c.getManys.Add(1)
			break
		}
	}
	return kv.GetMany(t.Txn, keys)
}

// PresumeAbsent costs no call: an engine that presumes checks the key at
// the commit (kv.Presumer).
func (t *opTxn) PresumeAbsent(key []byte) (bool, error) { return kv.PresumeAbsent(t.Txn, key) }

func (t *opTxn) Prefetch(keys [][]byte, ranges []kv.Range) error {
	t.c.prefetches.Add(1)
	if t.pkeys == nil {
		t.pkeys = map[string]bool{}
	}
	for _, k := range keys {
		t.pkeys[string(k)] = true
	}
	t.pranges = append(t.pranges, ranges...)
	return kv.Prefetch(t.Txn, keys, ranges)
}

func (t *opTxn) prefetched(start, end []byte) bool {
	for _, r := range t.pranges {
		if string(r.Start) <= string(start) && (r.End == nil || end != nil && string(end) <= string(r.End)) {
			return true
		}
	}
	return false
}
