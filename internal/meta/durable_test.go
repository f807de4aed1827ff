package meta_test

import (
	"context"
	"path/filepath"
	"syscall"
	"testing"

	"tessera/internal/block"
	"tessera/internal/kv/boltkv"
	"tessera/internal/meta"
	"tessera/internal/meta/metatest"
)

func openBolt(t testing.TB, path string) *boltkv.Store {
	store, err := boltkv.Open(path, boltkv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return store
}

// boltService is the metatest factory over a fresh boltkv file.
func boltService(t *testing.T, opts meta.Options) meta.API {
	store := openBolt(t, filepath.Join(t.TempDir(), "meta.db"))
	t.Cleanup(func() { store.Close() })
	s, err := meta.New(store, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformanceBolt(t *testing.T) {
	if testing.Short() {
		t.Skip("bolt conformance fsyncs every update; skipped in -short")
	}
	metatest.Run(t, boltService)
}

// TestDurable writes through one Service, closes the store, reopens it and
// checks that everything is there and that new inode numbers do not collide.
func TestDurable(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "meta.db")
	store := openBolt(t, path)
	s, err := meta.New(store, meta.Options{RootUid: 5, RootMode: 0700})
	if err != nil {
		t.Fatal(err)
	}
	must := func(in meta.Inode, err error) meta.Inode {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return in
	}
	d := must(s.Create(ctx, meta.CreateReq{Parent: meta.RootIno, Name: "d", Mode: syscall.S_IFDIR | 0755}))
	f := must(s.Create(ctx, meta.CreateReq{Parent: d.Ino, Name: "f", Mode: syscall.S_IFREG | 0644}))
	h := block.Sum([]byte("x"))
	f = must(s.Commit(ctx, meta.CommitReq{Ino: f.Ino, Changes: []meta.BlockChange{{Index: 3, New: h}}, Size: 4 * meta.DefaultBlockSize}))
	if err := s.SetXattr(ctx, f.Ino, "user.k", []byte("v"), 0); err != nil {
		t.Fatal(err)
	}
	f = must(s.GetAttr(ctx, f.Ino))
	o := must(s.Create(ctx, meta.CreateReq{Parent: d.Ino, Name: "o", Mode: syscall.S_IFREG | 0644}))
	must(s.Unlink(ctx, d.Ino, "o", 0))
	if _, err := s.RegisterServer(ctx, meta.Server{ID: "b0", Addr: "127.0.0.1:1"}); err != nil {
		t.Fatal(err)
	}
	st1, err := s.StatFS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}

	store = openBolt(t, path)
	defer store.Close()
	s, err = meta.New(store, meta.Options{RootUid: 99})
	if err != nil {
		t.Fatal(err)
	}
	root := must(s.GetAttr(ctx, meta.RootIno))
	if root.Uid != 5 || root.Mode != syscall.S_IFDIR|0700 || root.Nlink != 3 {
		t.Fatalf("root after reopen: %+v", root.Attr)
	}
	got := must(s.Lookup(ctx, d.Ino, "f"))
	if got.Attr != f.Attr {
		t.Fatalf("file after reopen: %+v, want %+v", got.Attr, f.Attr)
	}
	r, err := s.GetRecipe(ctx, f.Ino, 0, 10)
	if err != nil || len(r.Blocks) != 4 || r.Blocks[3] != h {
		t.Fatalf("recipe after reopen: %+v %v", r, err)
	}
	if v, err := s.GetXattr(ctx, f.Ino, "user.k"); err != nil || string(v) != "v" {
		t.Fatalf("xattr after reopen: %q %v", v, err)
	}
	if in := must(s.GetAttr(ctx, o.Ino)); in.Nlink != 0 {
		t.Fatalf("orphan after reopen: %+v", in.Attr)
	}
	orphans, _, err := s.Orphans(ctx, 0, 10)
	if err != nil || len(orphans) != 1 || orphans[0] != o.Ino {
		t.Fatalf("orphans after reopen: %v %v", orphans, err)
	}
	if m, err := s.Servers(ctx); err != nil || m.Epoch != 1 || len(m.Servers) != 1 {
		t.Fatalf("servers after reopen: %+v %v", m, err)
	}
	if st2, err := s.StatFS(ctx); err != nil || st2 != st1 {
		t.Fatalf("statfs after reopen: %+v %v, want %+v", st2, err, st1)
	}
	n := must(s.Create(ctx, meta.CreateReq{Parent: meta.RootIno, Name: "new", Mode: syscall.S_IFREG | 0644}))
	if n.Ino <= o.Ino {
		t.Fatalf("new inode %d reuses a number at or below %d", n.Ino, o.Ino)
	}
}

func TestModelBolt(t *testing.T) {
	metatest.RunModel(t, boltService, modelSeed(t), min(*stepsFlag, 500))
}
