package vfs

import (
	"bytes"
	"context"
	"errors"
	"syscall"
	"testing"

	"tessera/internal/meta"
)

// TestUnlinkAfterListing: names listed are unlinked with the inode the
// listing saw (no lookup), with every rule of an unlink kept: a file open
// here stays readable, with no link, until its release reaps it; one not
// open is deleted at once; and a name re-pointed since the listing (a
// rename over it) removes the inode it holds now, not leaving it behind.
func TestUnlinkAfterListing(t *testing.T) {
	v := newFS(t)
	ctx := context.Background()
	d := mk(t, v, alice, meta.RootIno, "d", syscall.S_IFDIR|0o755)
	for _, n := range []string{"open", "closed", "over", "moved"} {
		mk(t, v, alice, d.Ino, n, syscall.S_IFREG|0o644)
	}
	o, err := v.OpenFile(ctx, alice, mustLookup(t, v, d.Ino, "open").Ino, syscall.O_RDWR)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.File.Write(ctx, 0, []byte("still here")); err != nil {
		t.Fatal(err)
	}
	fh, err := v.OpenDir(ctx, Root, d.Ino)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]meta.Ino{}
	for _, e := range list(t, v, fh, 0, 100, true) {
		seen[e.Name] = e.Ino
	}
	v.ReleaseDir(fh)
	// "over" now names what "moved" was; the listing's inode for it is gone
	if err := v.Rename(ctx, Root, d.Ino, "moved", d.Ino, "over", 0); err != nil {
		t.Fatal(err)
	}
	if hint, ok := v.names.m[nameKey{d.Ino, "over"}]; !ok || hint != seen["over"] {
		t.Fatalf("hint for over = %d, %v; want the listing's %d", hint, ok, seen["over"])
	}
	for _, n := range []string{"open", "closed", "over"} {
		if err := v.Unlink(ctx, Cred{Uid: alice.Uid, Gid: alice.Gid, Checked: true}, d.Ino, n); err != nil {
			t.Fatalf("unlink %s: %v", n, err)
		}
		if _, err := v.Lookup(ctx, Root, d.Ino, n); !errors.Is(err, syscall.ENOENT) {
			t.Fatalf("lookup of %s after its unlink: %v, want ENOENT", n, err)
		}
	}
	for _, n := range []string{"closed", "over", "moved"} {
		if in, err := v.api.GetAttr(ctx, seen[n]); !errors.Is(err, syscall.ENOENT) {
			t.Errorf("inode of %s (%d) after the unlinks: nlink %d, %v; want it deleted", n, seen[n], in.Nlink, err)
		}
	}
	in, err := v.api.GetAttr(ctx, seen["open"])
	if err != nil || in.Nlink != 0 {
		t.Fatalf("open file after its unlink: nlink %d, %v; want 0, nil", in.Nlink, err)
	}
	buf := make([]byte, 32)
	if n, err := o.File.Read(ctx, 0, buf); err != nil || !bytes.Equal(buf[:n], []byte("still here")) {
		t.Fatalf("read of the unlinked open file: %q, %v", buf[:n], err)
	}
	if err := v.Release(ctx, o.Fh); err != nil {
		t.Fatal(err)
	}
	if _, err := v.api.GetAttr(ctx, seen["open"]); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("open file after its release: %v, want it deleted", err)
	}
}

func mustLookup(t *testing.T, v *FS, dir meta.Ino, name string) meta.Inode {
	t.Helper()
	in, err := v.Lookup(context.Background(), Root, dir, name)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// TestNamesBounded: the hints kept are bounded, starting afresh.
func TestNamesBounded(t *testing.T) {
	var n names
	n.put(1, "first", 2, syscall.S_IFREG)
	n.put(1, "dir", 3, syscall.S_IFDIR)
	if _, ok := n.take(1, "dir"); ok {
		t.Fatal("a directory's inode kept as a hint")
	}
	for i := range namesMax {
		n.put(2, string(rune('a'+i%26))+string(rune(i)), meta.Ino(i+10), syscall.S_IFREG)
	}
	if len(n.m) > namesMax {
		t.Fatalf("%d hints kept, want at most %d", len(n.m), namesMax)
	}
	if _, ok := n.take(1, "first"); ok {
		t.Fatalf("after %d more names the first is still kept: not bounded", namesMax)
	}
}
