package vfs

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"syscall"
	"testing"
	"testing/iotest"

	"tessera/internal/meta"
)

// TestResolve: components, ".", "..", symlinks in the middle (relative
// and absolute) followed, the last one not; a file in the middle is
// ENOTDIR, a loop ELOOP, a directory without search permission EACCES.
func TestResolve(t *testing.T) {
	v := newFS(t)
	ctx := context.Background()
	a := mk(t, v, alice, meta.RootIno, "a", syscall.S_IFDIR|0o755)
	b := mk(t, v, alice, a.Ino, "b", syscall.S_IFDIR|0o755)
	f := mk(t, v, alice, b.Ino, "f", syscall.S_IFREG|0o644)
	rel, err := v.Create(ctx, alice, meta.CreateReq{Parent: meta.RootIno, Name: "rel", Mode: syscall.S_IFLNK | 0o777, Target: "a/b", Excl: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.Create(ctx, alice, meta.CreateReq{Parent: b.Ino, Name: "abs", Mode: syscall.S_IFLNK | 0o777, Target: "/a", Excl: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Create(ctx, alice, meta.CreateReq{Parent: meta.RootIno, Name: "loop", Mode: syscall.S_IFLNK | 0o777, Target: "loop", Excl: true}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path string
		want meta.Ino
	}{
		{"/a/b/f", f.Ino}, {"a//b/./f", f.Ino}, {"/a/b/../b/f", f.Ino}, {"/../a", a.Ino},
		{"/", meta.RootIno}, {"", meta.RootIno}, {"rel/f", f.Ino}, {"rel", rel.Ino},
		{"/a/b/abs/b/f", f.Ino}, {"a/b/", b.Ino},
	} {
		in, err := v.Resolve(ctx, bob, meta.RootIno, tc.path)
		if err != nil || in.Ino != tc.want {
			t.Errorf("resolve %q: inode %d, %v; want %d", tc.path, in.Ino, err, tc.want)
		}
	}
	_, err = v.Resolve(ctx, bob, meta.RootIno, "/a/b/f/x")
	wantErrno(t, "a file in the middle", err, syscall.ENOTDIR)
	_, err = v.Resolve(ctx, bob, meta.RootIno, "/loop/x")
	wantErrno(t, "a symlink loop", err, syscall.ELOOP)
	_, err = v.Resolve(ctx, bob, meta.RootIno, "/a/nothing/f")
	wantErrno(t, "a missing component", err, syscall.ENOENT)
	_, err = v.Resolve(ctx, bob, meta.RootIno, strings.Repeat("a/", MaxPath))
	wantErrno(t, "a path over PATH_MAX", err, syscall.ENAMETOOLONG)
	if _, err := v.SetAttr(ctx, alice, a.Ino, SetAttr{Valid: meta.SetMode, Mode: 0o700}); err != nil {
		t.Fatal(err)
	}
	_, err = v.Resolve(ctx, bob, meta.RootIno, "/a/b/f")
	wantErrno(t, "through another's 0700 directory", err, syscall.EACCES)
	if in, err := v.Resolve(ctx, alice, a.Ino, "b/f"); err != nil || in.Ino != f.Ino {
		t.Fatalf("resolve from a base: %d, %v", in.Ino, err)
	}
}

// TestWriteFileAtomic: the file is written whole under a temporary name
// and renamed over the old one, which keeps its mode; a short reader
// leaves the old file and no temporary behind; write permission on the
// directory is needed.
func TestWriteFileAtomic(t *testing.T) {
	v := newFS(t)
	ctx := context.Background()
	d := mk(t, v, alice, meta.RootIno, "d", syscall.S_IFDIR|0o755)
	data := bytes.Repeat([]byte("0123456789"), 250000) // 2.5 MB: three chunks
	in, err := v.WriteFileAtomic(ctx, alice, d.Ino, "f", bytes.NewReader(data), int64(len(data)), 0o600)
	if err != nil || in.Size != uint64(len(data)) || in.Mode&0o7777 != 0o600 || in.Uid != alice.Uid {
		t.Fatalf("write: size %d mode %o uid %d, %v", in.Size, in.Mode&0o7777, in.Uid, err)
	}
	_, err = v.WriteFileAtomic(ctx, alice, d.Ino, "f", iotest.HalfReader(bytes.NewReader(data[:10])), int64(len(data)), 0)
	if err == nil || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("write from a short reader: %v, want an unexpected EOF", err)
	}
	if _, err := v.WriteFileAtomic(ctx, alice, d.Ino, "f", strings.NewReader("new"), 3, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := v.Lookup(ctx, alice, d.Ino, "f")
	if err != nil || f.Size != 3 || f.Mode&0o7777 != 0o600 {
		t.Fatalf("after the rewrite: size %d mode %o, %v; want 3 and the old mode 0600", f.Size, f.Mode&0o7777, err)
	}
	buf := make([]byte, 8)
	if n, _, err := v.ReadAt(ctx, alice, f.Ino, 0, buf); err != nil || string(buf[:n]) != "new" {
		t.Fatalf("read back %q, %v", buf[:n], err)
	}
	ents, _, err := v.ReadDir(ctx, alice, d.Ino, "", 10, false)
	if err != nil || len(ents) != 1 {
		t.Fatalf("directory holds %d entries (%v), want only f: no temporary left", len(ents), err)
	}
	_, err = v.WriteFileAtomic(ctx, bob, d.Ino, "g", strings.NewReader("x"), 1, 0)
	wantErrno(t, "write into another's 0755 directory", err, syscall.EACCES)
}
