package meta_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"tessera/internal/kv"
	"tessera/internal/kv/memkv"
	"tessera/internal/meta"
)

// cutStore is a shared store as a member cut off from its majority sees
// it: while cut, every update and every linearizable view fails at once
// (etcd's "no leader"), serializable views are answered.
type cutStore struct {
	*memkv.Store
	cut atomic.Bool
}

var errNoLeader = errors.New("cut store: no leader")

func (c *cutStore) Update(ctx context.Context, fn func(tx kv.Txn) error) error {
	if c.cut.Load() {
		return errNoLeader
	}
	return c.Store.Update(ctx, fn)
}

func (c *cutStore) View(ctx context.Context, fn func(tx kv.Txn) error) error {
	if c.cut.Load() && kv.ConsistencyOf(ctx) != kv.Serializable {
		return errNoLeader
	}
	return c.Store.View(ctx, fn)
}

// TestCutOffServesLagTolerantReads: at a site cut off from the majority,
// a caller that allows lag still looks up, stats and opens a file (its
// lease and open records cannot be written: it is served without them),
// unless the file's own policy is posix; a caller that does not allow lag
// gets an error, and so does any update.
func TestCutOffServesLagTolerantReads(t *testing.T) {
	ctx := context.Background()
	store := &cutStore{Store: memkv.New()}
	// The files are made through another Service: this one has recorded
	// no lease on them yet.
	svcs := sharedServices(t, store, meta.Options{}, 2, false)
	s, other := svcs[0], svcs[1]
	f := mkfile(t, other, "f")
	strict := mkfile(t, other, "strict")
	if err := other.SetXattr(ctx, strict.Ino, meta.PolicyXattr, []byte("posix"), 0); err != nil {
		t.Fatal(err)
	}
	info, err := s.OpenSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	api := s.WithSession(info.ID)

	store.cut.Store(true)
	lag := meta.AllowSerializable(ctx)
	if in, err := api.Lookup(lag, meta.RootIno, "f"); err != nil || in.Ino != f.Ino {
		t.Fatalf("lag-tolerant lookup while cut off: %d, %v; want inode %d", in.Ino, err, f.Ino)
	}
	if _, err := api.GetAttr(lag, f.Ino); err != nil {
		t.Fatalf("lag-tolerant getattr while cut off: %v", err)
	}
	if _, _, err := api.ReadDir(lag, meta.RootIno, "", 10, true); err != nil {
		t.Fatalf("lag-tolerant readdir while cut off: %v", err)
	}
	if in, err := api.HoldOpen(lag, f.Ino); err != nil || in.Ino != f.Ino {
		t.Fatalf("lag-tolerant open while cut off: %d, %v", in.Ino, err)
	}
	if n := s.LeaseStats().Opens; n != 1 {
		t.Fatalf("the session holds %d opens, want the one open held in memory", n)
	}
	if _, err := api.HoldOpen(lag, strict.Ino); err == nil {
		t.Fatal("an open of a posix file while cut off succeeded")
	}
	if _, err := api.GetAttr(ctx, f.Ino); err == nil {
		t.Fatal("a linearizable getattr while cut off succeeded")
	}
	if _, err := api.HoldOpen(ctx, f.Ino); err == nil {
		t.Fatal("an open that does not allow lag succeeded while cut off")
	}
	if _, err := api.Create(lag, meta.CreateReq{Parent: meta.RootIno, Name: "new", Mode: 0o100644, Excl: true}); err == nil {
		t.Fatal("a create while cut off succeeded")
	}
	if err := api.ReleaseOpen(ctx, f.Ino); err != nil {
		t.Fatalf("releasing the open held in memory: %v", err)
	}

	// Back: opens are recorded and reads leased again.
	store.cut.Store(false)
	if _, err := api.HoldOpen(ctx, strict.Ino); err != nil {
		t.Fatalf("an open after the cut healed: %v", err)
	}
	if _, err := api.GetAttr(ctx, f.Ino); err != nil {
		t.Fatalf("a getattr after the cut healed: %v", err)
	}
}
