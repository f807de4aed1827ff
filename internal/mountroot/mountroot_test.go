package mountroot

import (
	"context"
	"errors"
	"syscall"
	"testing"

	"tessera/internal/kv/memkv"
	"tessera/internal/meta"
)

func mkdir(t *testing.T, api meta.API, parent meta.Ino, name string, mode uint32) meta.Inode {
	t.Helper()
	in, err := api.Create(context.Background(), meta.CreateReq{Parent: parent, Name: name, Mode: mode, Excl: true})
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// TestSubtreeIsTheRoot: seen from /a/b, inode 1 is /a/b (its entries, its
// attributes, new entries land in it), names outside are not found from
// it, and the real root's number never stands for two inodes.
func TestSubtreeIsTheRoot(t *testing.T) {
	ctx := context.Background()
	svc, err := meta.New(memkv.New(), meta.Options{})
	if err != nil {
		t.Fatal(err)
	}
	a := mkdir(t, svc, meta.RootIno, "a", syscall.S_IFDIR|0o755)
	b := mkdir(t, svc, a.Ino, "b", syscall.S_IFDIR|0o750)
	f := mkdir(t, svc, b.Ino, "f", syscall.S_IFREG|0o644)
	mkdir(t, svc, meta.RootIno, "top", syscall.S_IFREG|0o644)

	root, err := Walk(ctx, svc, "/a/b/")
	if err != nil || root != b.Ino {
		t.Fatalf("walk /a/b: %d, %v; want %d", root, err, b.Ino)
	}
	if _, err := Walk(ctx, svc, "/a/b/f"); !errors.Is(err, meta.ErrNotDir) {
		t.Fatalf("walk to a file: %v", err)
	}
	if _, err := Walk(ctx, svc, "/a/nope"); !errors.Is(err, meta.ErrNotFound) {
		t.Fatalf("walk to nothing: %v", err)
	}
	api := New(svc, root)
	in, err := api.GetAttr(ctx, meta.RootIno)
	if err != nil || in.Ino != meta.RootIno || in.Mode != syscall.S_IFDIR|0o750 {
		t.Fatalf("root's attributes: %+v, %v; want /a/b's as inode 1", in, err)
	}
	if got, err := api.Lookup(ctx, meta.RootIno, "f"); err != nil || got.Ino != f.Ino {
		t.Fatalf("lookup f: %+v, %v", got, err)
	}
	if _, err := api.Lookup(ctx, meta.RootIno, "top"); !errors.Is(err, meta.ErrNotFound) {
		t.Fatalf("lookup of a name outside the subtree: %v", err)
	}
	if _, err := api.Lookup(ctx, meta.RootIno, "a"); !errors.Is(err, meta.ErrNotFound) {
		t.Fatalf("lookup of a name outside the subtree: %v", err)
	}
	made := mkdir(t, api, meta.RootIno, "new", syscall.S_IFDIR|0o755)
	if got, err := svc.Lookup(ctx, b.Ino, "new"); err != nil || got.Ino != made.Ino {
		t.Fatalf("a directory made in the mount's root is not in /a/b: %+v, %v", got, err)
	}
	ents, _, err := api.ReadDir(ctx, meta.RootIno, "", 0, true)
	if err != nil || len(ents) != 2 || ents[0].Name != "f" || ents[1].Name != "new" {
		t.Fatalf("readdir of the root: %+v, %v", ents, err)
	}
	// A number that is the real root's inside the service reads as /a/b's
	// from the mount: asking for b's number reaches the service's root,
	// never /a/b under two numbers.
	if got, err := api.GetAttr(ctx, b.Ino); err != nil || got.Ino != b.Ino || !got.IsDir() || got.Mode == b.Mode {
		t.Fatalf("getattr of /a/b's own number: %+v, %v; want the service's root under it", got, err)
	}
}

// TestQuotasSeenFromTheSubtree: the quota methods (generated, through
// mapQuota and mapQuotaCheck) map a quota's directory both ways: a quota
// set on the mount's root is the service's quota of /a/b, and every reply
// names it as inode 1.
func TestQuotasSeenFromTheSubtree(t *testing.T) {
	ctx := context.Background()
	svc, err := meta.New(memkv.New(), meta.Options{})
	if err != nil {
		t.Fatal(err)
	}
	a := mkdir(t, svc, meta.RootIno, "a", syscall.S_IFDIR|0o755)
	b := mkdir(t, svc, a.Ino, "b", syscall.S_IFDIR|0o755)
	f := mkdir(t, svc, b.Ino, "f", syscall.S_IFREG|0o644)
	api := New(svc, b.Ino).(meta.QuotaAPI)
	if q, err := api.SetQuota(ctx, meta.Quota{Dir: meta.RootIno, MaxInodes: 9}); err != nil || q.Dir != meta.RootIno {
		t.Fatalf("SetQuota of the mount's root: %+v, %v", q, err)
	}
	if q, err := svc.Quota(ctx, b.Ino); err != nil || q.MaxInodes != 9 {
		t.Fatalf("the service's quota of /a/b: %+v, %v; want the one set on the mount's root", q, err)
	}
	if _, err := svc.Quota(ctx, meta.RootIno); !errors.Is(err, meta.ErrNotFound) {
		t.Fatalf("the service's root got a quota: %v", err)
	}
	if q, err := api.Quota(ctx, meta.RootIno); err != nil || q.Dir != meta.RootIno || q.Inodes != 1 {
		t.Errorf("Quota of the mount's root: %+v, %v", q, err)
	}
	if l, err := api.Quotas(ctx); err != nil || len(l) != 1 || l[0].Dir != meta.RootIno {
		t.Errorf("Quotas: %+v, %v; want the one, on inode 1", l, err)
	}
	if q, err := api.QuotaOf(ctx, f.Ino); err != nil || q.Dir != meta.RootIno {
		t.Errorf("QuotaOf f: %+v, %v; want the root's", q, err)
	}
	if c, err := api.CheckQuota(ctx, meta.RootIno); err != nil || c.Dir != meta.RootIno || c.WalkInodes != 1 {
		t.Errorf("CheckQuota of the mount's root: %+v, %v", c, err)
	}
	if err := api.RemoveQuota(ctx, meta.RootIno); err != nil {
		t.Errorf("RemoveQuota of the mount's root: %v", err)
	}
	if _, err := svc.Quota(ctx, b.Ino); !errors.Is(err, meta.ErrNotFound) {
		t.Errorf("the quota of /a/b after RemoveQuota: %v", err)
	}
}

// queueSpy is an API below with a write-back queue: it keeps the last
// claim and operation it was handed and hands back ops.
type queueSpy struct {
	meta.API
	meta.WritebackAPI
	claim meta.ClaimReq
	op    meta.WBOp
	ops   []meta.WBOp
}

func (q *queueSpy) ClaimWriteback(_ context.Context, req meta.ClaimReq) ([]meta.WBOp, error) {
	q.claim = req
	return q.ops, nil
}

func (q *queueSpy) WritebackDone(_ context.Context, op meta.WBOp, _ string) error {
	q.op = op
	return nil
}

// TestQueuedOperationsSeenFromTheSubtree: the write-back methods
// (generated, through mapClaimReq and mapWBOp) swap the root and the
// mount's directory in a claim, in each claimed operation and in an
// operation handed back, and leave other numbers alone.
func TestQueuedOperationsSeenFromTheSubtree(t *testing.T) {
	ctx := context.Background()
	const dir, other = meta.Ino(5), meta.Ino(9)
	spy := &queueSpy{ops: []meta.WBOp{{Root: dir, Ino: other}, {Root: meta.RootIno, Ino: dir}}}
	api := New(spy, dir).(meta.WritebackAPI)
	ops, err := api.ClaimWriteback(ctx, meta.ClaimReq{Root: meta.RootIno})
	if err != nil || spy.claim.Root != dir {
		t.Fatalf("claim of the mount's root reached the service for %d (%v), want %d", spy.claim.Root, err, dir)
	}
	if len(ops) != 2 || ops[0].Root != meta.RootIno || ops[0].Ino != other || ops[1].Root != dir || ops[1].Ino != meta.RootIno {
		t.Errorf("claimed %+v, want the roots and inodes swapped", ops)
	}
	if err := api.WritebackDone(ctx, meta.WBOp{Root: meta.RootIno, Ino: other}, "t"); err != nil || spy.op.Root != dir || spy.op.Ino != other {
		t.Errorf("done reached the service as %+v (%v), want root %d", spy.op, err, dir)
	}
}
