package client

import (
	"context"
	"log/slog"
	"testing"

	"tessera/internal/block"
	"tessera/internal/meta"
)

// TestAttrsRideWithCommit: tar's fchown, fchmod and futimens on a file it
// has just written, under session, are held for the close's commit: the
// meta service keeps the old attributes until then (another client sees
// the file as of its last commit), this client shows the new ones at once
// (Overlay), and the commit installs all of them, the times set staying
// set. Under posix, and on a file with nothing uncommitted, nothing is held.
func TestAttrsRideWithCommit(t *testing.T) {
	ctx := context.Background()
	s := newShared(t, 1<<20)
	c := s.client(t, nil, nil, nil)
	in := s.create(t, "f")
	h := open(t, c, in.Ino)
	write(t, h, 0, []byte("content tar wrote"))
	cur, err := s.api.GetAttr(ctx, in.Ino)
	if err != nil {
		t.Fatal(err)
	}
	reqs := []meta.SetAttrReq{
		{Valid: meta.SetUid | meta.SetGid, Uid: 1234, Gid: 5678},
		{Valid: meta.SetMode, Mode: 0o640},
		{Valid: meta.SetAtime | meta.SetMtime, Atime: 1e18, Mtime: 2e18},
	}
	if would, need := c.WouldDeferAttr(in.Ino); !would || !need {
		t.Fatalf("WouldDeferAttr = %v, %v before the first change; want true, true", would, need)
	}
	if _, ok := c.DeferAttr(in.Ino, reqs[0], meta.Inode{}); ok {
		t.Fatal("the first change was held without the current attributes")
	}
	for i, req := range reqs {
		if req.Valid&meta.SetMtime != 0 {
			c.MtimeSet(in.Ino) // as vfs.SetAttr does first
		}
		base := cur
		if i > 0 {
			if would, need := c.WouldDeferAttr(in.Ino); !would || need {
				t.Fatalf("WouldDeferAttr = %v, %v with a change held; want true, false", would, need)
			}
			base = meta.Inode{} // the held change carries it
		}
		out, ok := c.DeferAttr(in.Ino, req, base)
		if !ok {
			t.Fatalf("change %d not held under session with writes uncommitted", i)
		}
		cur = out
	}
	want := func(what string, got meta.Inode) {
		t.Helper()
		if got.Uid != 1234 || got.Gid != 5678 || got.Mode&0o7777 != 0o640 || got.Mtime != 2e18 || got.Atime != 1e18 || got.Mode&^0o7777 != in.Mode&^0o7777 {
			t.Fatalf("%s: uid %d gid %d mode %o atime %d mtime %d; want 1234 5678 %o 1e18 2e18",
				what, got.Uid, got.Gid, got.Mode, got.Atime, got.Mtime, in.Mode&^0o7777|0o640)
		}
	}
	want("DeferAttr's answer", cur)
	held, _ := s.api.GetAttr(ctx, in.Ino)
	if held.Uid == 1234 || held.Mode&0o7777 == 0o640 {
		t.Fatalf("the meta service has the change before the commit: uid %d mode %o", held.Uid, held.Mode)
	}
	c.Overlay(&held)
	want("this client's view before the commit", held)
	if n := c.Stats().AttrsDeferred; n != 3 {
		t.Fatalf("%d changes held, want 3", n)
	}
	flush(t, h)
	got, _ := s.api.GetAttr(ctx, in.Ino)
	want("the meta service after the commit", got)
	if got.Size != uint64(len("content tar wrote")) {
		t.Fatalf("size %d after the commit", got.Size)
	}
	// Clean now: a change goes to the meta service itself.
	if _, ok := c.DeferAttr(in.Ino, meta.SetAttrReq{Valid: meta.SetMode, Mode: 0o600}, got); ok {
		t.Fatal("a change of a file with nothing uncommitted was held")
	}
	h.Release(ctx)

	posix, err := New(ctx, Config{Meta: s.api, Policy: "posix", Logger: slog.New(slog.DiscardHandler),
		Dial: func(meta.Server) (block.Store, error) { return s.store, nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer posix.Close(ctx)
	in2 := s.create(t, "g")
	h2 := open(t, posix, in2.Ino)
	defer h2.Release(ctx)
	write(t, h2, 0, []byte("x"))
	if _, ok := posix.DeferAttr(in2.Ino, meta.SetAttrReq{Valid: meta.SetMode, Mode: 0o600}, in2); ok {
		t.Fatal("a change under posix was held")
	}
}
