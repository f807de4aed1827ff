package meta

import (
	"context"
	"errors"
	"sync/atomic"
	"syscall"
	"testing"

	"tessera/internal/kv"
	"tessera/internal/kv/memkv"
)

// hookScanCounter counts the scans of the fileset and quota ranges; its
// transactions offer no kv.Prefetch, as Pebble's do not, so every scan
// reaches the engine.
type hookScanCounter struct {
	kv.Store
	scans atomic.Int64
}

func (c *hookScanCounter) View(ctx context.Context, fn func(kv.Txn) error) error {
	return c.Store.View(ctx, func(tx kv.Txn) error { return fn(hookScanTxn{tx, c}) })
}

func (c *hookScanCounter) Update(ctx context.Context, fn func(kv.Txn) error) error {
	return c.Store.Update(ctx, func(tx kv.Txn) error { return fn(hookScanTxn{tx, c}) })
}

type hookScanTxn struct {
	kv.Txn
	c *hookScanCounter
}

func (t hookScanTxn) Scan(start, end []byte, fn func(k, v []byte) (bool, error)) error {
	if len(start) > 0 && (start[0] == pfxFileset || start[0] == pfxQuota) {
		t.c.scans.Add(1)
	}
	return t.Txn.Scan(start, end, fn)
}

// TestHookFlagsSkipScans: on a store with no fileset and no quota, a
// create, setattr, commit, rename and unlink scan neither range (they
// read the flags instead; issue 28: the two scans were 15% of a
// create-stat-unlink cycle's CPU on Pebble). Once a quota exists it is
// enforced (a store of an older build with a quota:
// TestUpgradeGivesQuotaVersion).
func TestHookFlagsSkipScans(t *testing.T) {
	ctx := context.Background()
	inner := memkv.New()
	defer inner.Close()
	store := &hookScanCounter{Store: inner}
	s, err := New(store, Options{})
	if err != nil {
		t.Fatal(err)
	}
	d := mkdir(t, s, RootIno, "d")
	before := store.scans.Load()
	f, err := s.Create(ctx, CreateReq{Parent: d, Name: "f", Mode: syscall.S_IFREG | 0o644, Excl: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetAttr(ctx, f.Ino, SetAttrReq{Valid: SetMode, Mode: 0o600}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Commit(ctx, CommitReq{Ino: f.Ino, Size: 10, SetSize: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Rename(ctx, d, "f", d, "g", 0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Unlink(ctx, d, "g", f.Ino); err != nil {
		t.Fatal(err)
	}
	if n := store.scans.Load() - before; n != 0 {
		t.Fatalf("changes on a store without filesets or quotas scanned their ranges %d times, want 0", n)
	}

	if _, err := s.SetQuota(ctx, Quota{Dir: d, MaxInodes: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, CreateReq{Parent: d, Name: "a", Mode: syscall.S_IFREG | 0o644}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, CreateReq{Parent: d, Name: "b", Mode: syscall.S_IFREG | 0o644}); !errors.Is(err, syscall.EDQUOT) {
		t.Fatalf("a second inode under a quota of 1: %v, want EDQUOT", err)
	}

}
