package meta_test

import (
	"context"
	"fmt"
	"testing"

	"tessera/internal/kv/memkv"
	"tessera/internal/meta"
	"tessera/internal/meta/metatest"
)

// TestLeasesBoundedAndReleasedOnRemove: a session that creates many files
// holds at most MaxLeases leases, and removing the files and their
// directory releases the leases on them, though the session that removed
// them is not called back (resident memory grew ~580 bytes a file created
// through a mount, to a million files, and stayed after they were
// removed).
func TestLeasesBoundedAndReleasedOnRemove(t *testing.T) {
	ctx := context.Background()
	clock := metatest.NewClock()
	const maxLeases = 256
	svc, err := meta.New(memkv.New(), meta.Options{Now: clock.Now, After: clock.After, MaxLeases: maxLeases})
	if err != nil {
		t.Fatal(err)
	}
	si, err := svc.OpenSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	api := svc.WithSession(si.ID)
	dir, err := api.Create(ctx, meta.CreateReq{Parent: meta.RootIno, Name: "d", Mode: 0o40755, Excl: true})
	if err != nil {
		t.Fatal(err)
	}
	const files = 3 * maxLeases
	for i := range files {
		if _, err := api.Create(ctx, meta.CreateReq{Parent: dir.Ino, Name: fmt.Sprintf("f%d", i), Mode: 0o100644, Excl: true}); err != nil {
			t.Fatal(err)
		}
		if st := svc.LeaseStats(); st.Leases > maxLeases {
			t.Fatalf("after %d creates the session holds %d leases; MaxLeases is %d", i+1, st.Leases, maxLeases)
		}
	}
	for i := range files {
		if _, err := api.Unlink(ctx, dir.Ino, fmt.Sprintf("f%d", i), 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := api.Rmdir(ctx, meta.RootIno, "d"); err != nil {
		t.Fatal(err)
	}
	// The root's lease may stay: it still exists.
	if st := svc.LeaseStats(); st.Leases > 1 {
		t.Fatalf("%d leases held after every file and the directory were removed; want at most the root's", st.Leases)
	}
}
