package meta

import (
	"context"
	"fmt"
	"syscall"
	"testing"

	"tessera/internal/kv/memkv"
)

// TestAllocsPerOp pins the allocations of a lookup and of a create on a
// store that reads key by key (memkv; Pebble alike): no name hint, no
// prefetch keys, no GetMany slices (txn.multiGets, txn.prefetches):
// 9 and 65 when written, 13 and 77 before those cuts. An allocation count
// is behaviour (what the collector must keep up with), not speed.
func TestAllocsPerOp(t *testing.T) {
	ctx := context.Background()
	store := memkv.New()
	defer store.Close()
	s, err := New(store, Options{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := s.Create(ctx, CreateReq{Parent: RootIno, Name: "d", Mode: syscall.S_IFDIR | 0o755})
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, 400)
	for i := range names {
		names[i] = fmt.Sprintf("f%03d", i)
	}
	i := 0
	create := testing.AllocsPerRun(200, func() {
		if _, err := s.Create(ctx, CreateReq{Parent: d.Ino, Name: names[i], Mode: syscall.S_IFREG | 0o644, Excl: true}); err != nil {
			t.Fatal(err)
		}
		i++
	})
	i = 0
	lookup := testing.AllocsPerRun(200, func() {
		if _, err := s.Lookup(ctx, d.Ino, names[i%200]); err != nil {
			t.Fatal(err)
		}
		i++
	})
	t.Logf("allocations: create %.1f, lookup %.1f", create, lookup)
	if create > createAllocsMax || lookup > lookupAllocsMax {
		t.Errorf("allocations: create %.1f (at most %d), lookup %.1f (at most %d)", create, createAllocsMax, lookup, lookupAllocsMax)
	}
}

const createAllocsMax, lookupAllocsMax = 70, 11
