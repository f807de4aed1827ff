package meta

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"

	"tessera/internal/kv"
	"tessera/internal/kv/memkv"
)

// TestQuotaCacheFollowsOtherServices: two meta services share a store;
// each keeps the quota set and the directories' chains between changes.
// A quota set, changed or removed through one is enforced by the other at
// its next change, however warm its cache (without the version the
// change reads, b would go on charging the set it cached).
func TestQuotaCacheFollowsOtherServices(t *testing.T) {
	ctx := context.Background()
	store := memkv.New()
	defer store.Close()
	a, err := New(store, Options{Shared: true})
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(store, Options{Shared: true})
	if err != nil {
		t.Fatal(err)
	}
	top := mkdir(t, a, RootIno, "top")
	dir := mkdir(t, a, top, "dir")
	create := func(s *Service, name string) error {
		_, err := s.Create(ctx, CreateReq{Parent: dir, Name: name, Mode: syscall.S_IFREG | 0o644, Excl: true})
		return err
	}
	// b's cache: a quota elsewhere, so the set is not empty, and dir's
	// chain (no quota above it) kept.
	other := mkdir(t, a, RootIno, "other")
	if _, err := a.SetQuota(ctx, Quota{Dir: other, MaxInodes: 100}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := create(b, fmt.Sprintf("warm%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	// A quota on top, through a: it holds dir and three files.
	if _, err := a.SetQuota(ctx, Quota{Dir: top, MaxInodes: 5}); err != nil {
		t.Fatal(err)
	}
	if err := create(b, "fifth"); err != nil {
		t.Fatal(err)
	}
	if err := create(b, "sixth"); !errors.Is(err, syscall.EDQUOT) {
		t.Fatalf("b's create past the quota a set: %v, want EDQUOT", err)
	}
	// Raised through a: b may create one more.
	if _, err := a.SetQuota(ctx, Quota{Dir: top, MaxInodes: 6}); err != nil {
		t.Fatal(err)
	}
	if err := create(b, "sixth"); err != nil {
		t.Fatalf("b's create after a raised the quota: %v", err)
	}
	if q, err := b.Quota(ctx, top); err != nil || q.Inodes != 6 {
		t.Fatalf("quota of top: %+v, %v; want 6 inodes", q, err)
	}
	// Removed through a: no limit.
	if err := a.RemoveQuota(ctx, top); err != nil {
		t.Fatal(err)
	}
	if err := create(b, "seventh"); err != nil {
		t.Fatalf("b's create after a removed the quota: %v", err)
	}
}

// TestQuotaChainKeptBetweenChanges: with a quota on the tree, a change
// on a store with one writer reads the usage it charges, not the "Q"
// range, the quota set's version and the inodes of every directory up to
// the root, once the directory's chain is known.
func TestQuotaChainKeptBetweenChanges(t *testing.T) {
	ctx := context.Background()
	inner := memkv.New()
	defer inner.Close()
	store := &readRecorder{Store: inner}
	s, err := New(store, Options{})
	if err != nil {
		t.Fatal(err)
	}
	top := mkdir(t, s, RootIno, "top")
	dir := mkdir(t, s, mkdir(t, s, mkdir(t, s, top, "a"), "b"), "c")
	if _, err := s.SetQuota(ctx, Quota{Dir: top, MaxInodes: 1 << 30}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, CreateReq{Parent: dir, Name: "first", Mode: 0o644, Excl: true}); err != nil {
		t.Fatal(err)
	}
	var inodeReads, quotaScans, versionReads int
	store.onGet = func(k []byte) {
		if len(k) == 9 && k[0] == pfxInode && Ino(be64(k[1:])) != dir {
			inodeReads++
		}
		if string(k) == string(keyQuotas) {
			versionReads++
		}
	}
	store.onScan = func(start []byte) {
		if len(start) > 0 && start[0] == pfxQuota {
			quotaScans++
		}
	}
	for i := range 10 {
		if _, err := s.Create(ctx, CreateReq{Parent: dir, Name: fmt.Sprintf("f%d", i), Mode: 0o644, Excl: true}); err != nil {
			t.Fatal(err)
		}
	}
	store.onGet, store.onScan = nil, nil
	if inodeReads != 0 || quotaScans != 0 || versionReads != 0 {
		t.Fatalf("10 creates under a quota read %d inodes above their directory, scanned the quotas %d times and read their version %d times; want none (a store with one writer)",
			inodeReads, quotaScans, versionReads)
	}
	if q, err := s.Quota(ctx, top); err != nil || q.Inodes != 3+1+10 {
		t.Fatalf("quota of top: %+v, %v; want 14 inodes", q, err)
	}
}

// TestUpgradeGivesQuotaVersion: a store of key-schema version 4 with a
// quota (no "m" "quotas" record) is given the quota set's version, so the
// quota is enforced.
func TestUpgradeGivesQuotaVersion(t *testing.T) {
	ctx := context.Background()
	store := memkv.New()
	defer store.Close()
	s, err := New(store, Options{})
	if err != nil {
		t.Fatal(err)
	}
	top := mkdir(t, s, RootIno, "top")
	if _, err := s.SetQuota(ctx, Quota{Dir: top, MaxInodes: 1}); err != nil {
		t.Fatal(err)
	}
	// As a build of version 4 left it.
	if err := store.Update(ctx, func(tx kv.Txn) error {
		if err := tx.Delete(keyQuotas); err != nil {
			return err
		}
		return tx.Put(keyFormat, encodeU64(4))
	}); err != nil {
		t.Fatal(err)
	}
	s2, err := New(store, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s2.Create(ctx, CreateReq{Parent: top, Name: "f", Mode: 0o644}); err != nil {
		t.Fatal(err)
	}
	if _, err := s2.Create(ctx, CreateReq{Parent: top, Name: "g", Mode: 0o644}); !errors.Is(err, syscall.EDQUOT) {
		t.Fatalf("create past the quota of an upgraded store: %v, want EDQUOT", err)
	}
}

// readRecorder calls onGet with the key of each Get and onScan with the
// start of each Scan of an Update's transactions, when set.
type readRecorder struct {
	kv.Store
	onGet  func(key []byte)
	onScan func(start []byte)
}

func (r *readRecorder) Update(ctx context.Context, fn func(kv.Txn) error) error {
	return r.Store.Update(ctx, func(tx kv.Txn) error { return fn(recordingTxn{tx, r}) })
}

type recordingTxn struct {
	kv.Txn
	r *readRecorder
}

func (x recordingTxn) Get(key []byte) ([]byte, bool, error) {
	if x.r.onGet != nil {
		x.r.onGet(key)
	}
	return x.Txn.Get(key)
}

func (x recordingTxn) Scan(start, end []byte, fn func(key, value []byte) (bool, error)) error {
	if x.r.onScan != nil {
		x.r.onScan(start)
	}
	return x.Txn.Scan(start, end, fn)
}
