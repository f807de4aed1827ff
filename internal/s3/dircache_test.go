package s3

import (
	"bytes"
	"context"
	"syscall"
	"testing"
	"time"

	"tessera/internal/clock"
	"tessera/internal/meta"
	"tessera/internal/vfs"
)

// TestDirCacheStale: a key's directories are kept (dircache.go), and one
// removed and made again behind the endpoint's back (here through vfs, as
// a mount would) within bucketTTL is found afresh: a PUT into it does not
// fail and lands in the new directory, and a GET of a key written there
// finds it. (Without the fresh second walk the PUT answers NoSuchKey and
// the GET NoSuchKey.)
func TestDirCacheStale(t *testing.T) {
	clk := clock.NewFake(time.Unix(1_000_000, 0)) // kept entries stay kept
	f := newFixtureWith(t, Config{Clock: clk})
	ctx := f.key(t, "alice", RoleRW, "")
	f.bucket(t, ctx, "bkt")
	f.put(t, ctx, "bkt", "a/b/k1", []byte("one"))
	bg := context.Background()
	remake := func(gone string) meta.Ino {
		t.Helper()
		a, err := f.b.v.Resolve(bg, vfs.Root, meta.RootIno, "/bkt/a")
		if err != nil {
			t.Fatal(err)
		}
		b, err := f.b.v.Lookup(bg, vfs.Root, a.Ino, "b")
		if err != nil {
			t.Fatal(err)
		}
		if err := f.b.v.Unlink(bg, vfs.Root, b.Ino, gone); err != nil {
			t.Fatal(err)
		}
		if err := f.b.v.Rmdir(bg, vfs.Root, a.Ino, "b"); err != nil {
			t.Fatal(err)
		}
		nb, err := f.b.v.Create(bg, vfs.Root, meta.CreateReq{Parent: a.Ino, Name: "b", Mode: syscall.S_IFDIR | 0o777})
		if err != nil {
			t.Fatal(err)
		}
		if nb.Ino == b.Ino {
			t.Fatalf("directory b made again with its old inode %d", b.Ino)
		}
		return nb.Ino
	}
	remake("k1")
	f.put(t, ctx, "bkt", "a/b/k2", []byte("two"))
	if _, err := f.b.v.Resolve(bg, vfs.Root, meta.RootIno, "/bkt/a/b/k2"); err != nil {
		t.Fatalf("a PUT into a directory made again: %v", err)
	}
	nb := remake("k2")
	o, err := f.b.v.CreateOpen(bg, vfs.Root, meta.CreateReq{Parent: nb, Name: "k3", Mode: 0o644}, syscall.O_WRONLY)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.File.Write(bg, 0, []byte("three")); err != nil {
		t.Fatal(err)
	}
	if err := f.b.v.Release(bg, o.Fh); err != nil {
		t.Fatal(err)
	}
	if got := f.get(t, ctx, "bkt", "a/b/k3"); !bytes.Equal(got, []byte("three")) {
		t.Fatalf("GET of a key written in a directory made again: %q", got)
	}
}
