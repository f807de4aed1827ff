package vfs

import (
	"context"
	"fmt"
	"syscall"
	"testing"

	"tessera/internal/meta"
)

// list reads open directory fh from off, at most max entries.
func list(t *testing.T, v *FS, fh, off uint64, max int, plus bool) []DirEntry {
	t.Helper()
	var out []DirEntry
	err := v.Dir(fh).List(context.Background(), off, plus, func(e DirEntry) bool {
		if len(out) == max {
			return false
		}
		out = append(out, e)
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestDirOffsetsAreStable: a listing of more entries than one page of the
// meta service, read a few entries at a time, resumed at each offset
// returned, yields every name once in order; resuming at an earlier offset
// gives the same entries again; offset 0 lists afresh (a name made since
// appears); plus carries the attributes.
func TestDirOffsetsAreStable(t *testing.T) {
	v := newFS(t)
	ctx := context.Background()
	d := mk(t, v, alice, meta.RootIno, "d", syscall.S_IFDIR|0o755)
	const n = dirPage + 300
	for i := range n {
		mk(t, v, alice, d.Ino, fmt.Sprintf("f%05d", i), syscall.S_IFREG|0o644)
	}
	fh, err := v.OpenDir(ctx, alice, d.Ino)
	if err != nil {
		t.Fatal(err)
	}
	defer v.ReleaseDir(fh)
	var all []DirEntry
	var marks []uint64 // offsets to resume at
	for off := uint64(0); ; {
		page := list(t, v, fh, off, 97, true)
		if len(page) == 0 {
			break
		}
		marks = append(marks, off)
		all = append(all, page...)
		off = page[len(page)-1].Off
	}
	if len(all) != n+2 || all[0].Name != "." || all[1].Name != ".." || all[0].Ino != d.Ino {
		t.Fatalf("listed %d entries starting %q %q, want %d starting . ..", len(all), all[0].Name, all[1].Name, n+2)
	}
	for i, e := range all[2:] {
		if want := fmt.Sprintf("f%05d", i); e.Name != want || e.Inode == nil || e.Inode.Ino != e.Ino || e.Off != uint64(i+3) {
			t.Fatalf("entry %d: %q (offset %d, attributes %v), want %q at offset %d with attributes", i, e.Name, e.Off, e.Inode != nil, want, i+3)
		}
	}
	again := list(t, v, fh, marks[5], 3, false)
	if again[0].Name != all[marks[5]].Name || again[0].Inode != nil {
		t.Fatalf("resumed at offset %d: %q, want %q (without attributes)", marks[5], again[0].Name, all[marks[5]].Name)
	}
	mk(t, v, alice, d.Ino, "a-new-one", syscall.S_IFREG|0o644)
	if fresh := list(t, v, fh, 0, 3, false); fresh[2].Name != "a-new-one" {
		t.Fatalf("a listing from 0 starts %q, want the name made since", fresh[2].Name)
	}
	if err := v.Dir(fh).List(ctx, 0, false, func(DirEntry) bool { return false }); err != nil {
		t.Fatal(err)
	}
}

// TestOpenDirChecks: a directory of another with mode 0700 is EACCES, a
// file is ENOTDIR, and a released handle is gone.
func TestOpenDirChecks(t *testing.T) {
	v := newFS(t)
	ctx := context.Background()
	p := mk(t, v, alice, meta.RootIno, "p", syscall.S_IFDIR|0o700)
	_, err := v.OpenDir(ctx, bob, p.Ino)
	wantErrno(t, "opendir of another's 0700 directory", err, syscall.EACCES)
	f := mk(t, v, alice, meta.RootIno, "f", syscall.S_IFREG|0o644)
	_, err = v.OpenDir(ctx, alice, f.Ino)
	wantErrno(t, "opendir of a file", err, syscall.ENOTDIR)
	_, err = v.OpenDir(ctx, Cred{Uid: 1000, Checked: true}, f.Ino)
	wantErrno(t, "opendir of a file by a checked caller", err, syscall.ENOTDIR)
	fh, err := v.OpenDir(ctx, alice, p.Ino)
	if err != nil {
		t.Fatal(err)
	}
	v.ReleaseDir(fh)
	if v.Dir(fh) != nil {
		t.Fatal("a released directory handle is still open")
	}
}
