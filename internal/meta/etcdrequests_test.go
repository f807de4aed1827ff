package meta_test

import (
	"context"
	"fmt"
	"slices"
	"syscall"
	"testing"

	"tessera/internal/kv/etcdkv"
	"tessera/internal/kv/etcdkv/etcdtest"
	"tessera/internal/meta"
)

// TestEtcdRequestsPerCreate pins what a create costs a real etcd member in
// requests (round trips), as a mount's `: > f` makes it: a create that
// opens the new file, then its release. TestOpCountsShared counts store
// calls; this counts what etcdkv sends for them (issue 29). A Service
// also sends requests of its own in the background (liveness, tidying),
// which only add: each operation's count is the least over its runs.
func TestEtcdRequestsPerCreate(t *testing.T) {
	c := etcdtest.Start(t, 1)
	ctx := context.Background()
	store, err := etcdkv.Open(ctx, etcdkv.Options{Endpoints: c.Endpoints(), Prefix: "/reqs"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	s := sharedServices(t, store, meta.Options{}, 1, true)[0]
	info, err := s.OpenSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	api := s.WithSession(info.ID)
	d, err := api.Create(ctx, meta.CreateReq{Parent: meta.RootIno, Name: "d", Mode: syscall.S_IFDIR | 0o755})
	if err != nil {
		t.Fatal(err)
	}
	const runs = 20
	var creates, releases []int64
	for i := range runs {
		// The kernel's LOOKUP of the name first, as the mount sends it:
		// its reads (the directory, the name absent) are in the store's
		// read cache for the create.
		if _, err := api.Lookup(ctx, d.Ino, fmt.Sprintf("f%02d", i)); err == nil {
			t.Fatalf("lookup of f%02d found it before its create", i)
		}
		before := store.Requests()
		in, err := api.Create(ctx, meta.CreateReq{Parent: d.Ino, Name: fmt.Sprintf("f%02d", i), Mode: 0o644, Excl: true, Open: true})
		if err != nil {
			t.Fatal(err)
		}
		mid := store.Requests()
		if err := api.ReleaseOpen(ctx, in.Ino); err != nil {
			t.Fatal(err)
		}
		after := store.Requests()
		creates = append(creates, mid.Sub(before).Total())
		releases = append(releases, after.Sub(mid).Total())
	}
	t.Logf("etcd requests per create and open: %v; per release: %v", creates, releases)
	// The create after its lookup: the commit alone. What its Prefetch
	// asks for (the parent, the name, a usage shard, the hooks' ranges)
	// is in etcdkv's read cache: the lookup read the first two, earlier
	// creates wrote the shard and read the ranges (was 2 requests: the
	// Prefetch's read-only Txn and the commit).
	if got := slices.Min(creates); got > 1 {
		t.Errorf("a create that opens, after its lookup, costs %d etcd requests; want at most 1", got)
	}
	// The release: none of its own; the open record goes in a later batch
	// of drops (opendrops.go; was 1 request, the commit deleting it).
	if got := slices.Min(releases); got > 0 {
		t.Errorf("a release costs %d etcd requests; want none", got)
	}
	// Unlinking an open file and releasing it deletes it at the release:
	// the presumed absence of the orphan marker is checked, not assumed.
	in, err := api.Create(ctx, meta.CreateReq{Parent: d.Ino, Name: "open", Mode: 0o644, Excl: true, Open: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := api.Unlink(ctx, d.Ino, "open", in.Ino); err != nil {
		t.Fatal(err)
	}
	if _, err := api.GetAttr(ctx, in.Ino); err != nil {
		t.Fatalf("getattr of an unlinked file still open: %v", err)
	}
	if err := api.ReleaseOpen(ctx, in.Ino); err != nil {
		t.Fatal(err)
	}
	meta.FlushOpenDrops(s)
	if _, err := s.GetAttr(ctx, in.Ino); err == nil {
		t.Fatalf("inode %d still there after its last release, unlinked", in.Ino)
	}
}
