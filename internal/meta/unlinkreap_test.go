package meta_test

import (
	"context"
	"errors"
	"testing"

	"tessera/internal/kv/memkv"
	"tessera/internal/meta"
)

// TestUnlinkReap checks that Unlink deletes the inode in the same
// transaction only when asked for that very inode and the last link goes.
func TestUnlinkReap(t *testing.T) {
	ctx := context.Background()
	s, err := meta.New(memkv.New(), meta.Options{})
	if err != nil {
		t.Fatal(err)
	}
	mk := func(name string) meta.Inode {
		in, err := s.Create(ctx, meta.CreateReq{Parent: meta.RootIno, Name: name, Mode: 0o100644, Excl: true})
		if err != nil {
			t.Fatal(err)
		}
		return in
	}
	orphans := func() int {
		inos, _, err := s.Orphans(ctx, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		return len(inos)
	}
	a := mk("a")
	if _, err := s.Unlink(ctx, meta.RootIno, "a", a.Ino); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetAttr(ctx, a.Ino); !errors.Is(err, meta.ErrNotFound) {
		t.Fatalf("getattr after unlink with reap: %v; want ENOENT", err)
	}
	if n := orphans(); n != 0 {
		t.Fatalf("%d orphans after unlink with reap; want 0", n)
	}

	b := mk("b")
	if _, err := s.Unlink(ctx, meta.RootIno, "b", b.Ino+1000); err != nil {
		t.Fatal(err)
	}
	if n := orphans(); n != 1 {
		t.Fatalf("%d orphans after unlink naming another inode; want 1", n)
	}

	c := mk("c")
	if _, err := s.Link(ctx, c.Ino, meta.RootIno, "c2"); err != nil {
		t.Fatal(err)
	}
	out, err := s.Unlink(ctx, meta.RootIno, "c", c.Ino)
	if err != nil || out.Nlink != 1 {
		t.Fatalf("unlink of one of two links: nlink %d, %v; want 1", out.Nlink, err)
	}
	if _, err := s.Lookup(ctx, meta.RootIno, "c2"); err != nil {
		t.Fatalf("the other link is gone: %v", err)
	}
	st, _ := s.StatFS(ctx)
	if st.Files != 3 { // root, orphan b, c
		t.Fatalf("files counter %d; want 3", st.Files)
	}
}
