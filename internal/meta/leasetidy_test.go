package meta_test

import (
	"context"
	"testing"

	"tessera/internal/kv/memkv"
	"tessera/internal/meta"
)

// TestTidyingSparesARecordInUse: a tidying round that runs while a read
// has found its Service's lease record and not been granted yet leaves
// the record: the read gets its lease, not a needless invalidation. (A
// round used to drop every unheld record at once: the conformance suite
// over a shared store saw spurious invalidations when the first round of
// ServeShared met a test's first reads.)
func TestTidyingSparesARecordInUse(t *testing.T) {
	ctx := context.Background()
	store := &armedStore{Store: memkv.New()}
	s := sharedServices(t, store, meta.Options{}, 1, false)[0]
	f := mkfile(t, s, "f")
	read := func() meta.SessionID {
		t.Helper()
		se, err := s.OpenSession(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.WithSession(se.ID).GetAttr(ctx, f.Ino); err != nil {
			t.Fatal(err)
		}
		return se.ID
	}
	// A session reads f (the record is written) and ends: the record is
	// unheld, and a round finds it so.
	first := read()
	if err := s.CloseSession(ctx, first); err != nil {
		t.Fatal(err)
	}
	meta.TidyLeases(ctx, s)
	// The next read finds the record; a round runs before its grant.
	tidy := func() { meta.TidyLeases(ctx, s) }
	store.onView.Store(&tidy)
	id := read()
	if store.onView.Load() != nil {
		t.Fatal("the read ran no read-only transaction: the test tidied nothing in between")
	}
	cbs, err := s.Callbacks(ctx, id, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(cbs) != 0 {
		t.Fatalf("callbacks after a read met a tidying round = %+v, want none (a lease)", cbs)
	}
	// The lease holds: a change through another session calls back.
	if _, err := s.SetAttr(ctx, f.Ino, meta.SetAttrReq{Valid: meta.SetMode, Mode: 0o600}); err != nil {
		t.Fatal(err)
	}
	if cb := awaitCallback(t, s, id, f.Ino); cb.Ino != f.Ino {
		t.Fatalf("callback %+v", cb)
	}
}
