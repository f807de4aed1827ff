package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

func TestRenameOverExisting(t *testing.T) {
	d := fsDir(t)
	a, b := filepath.Join(d, "a"), filepath.Join(d, "b")
	writeFile(t, a, []byte("A"))
	writeFile(t, b, []byte("BB"))
	inoA := stat(t, a).Ino
	old, err := os.Open(b) // keeps the replaced file alive
	must(t, err)
	defer old.Close()

	must(t, unix.Rename(a, b))
	_, err = os.Stat(a)
	wantErrno(t, "stat of the old name", err, syscall.ENOENT)
	wantContent(t, b, []byte("A"))
	if ino := stat(t, b).Ino; ino != inoA {
		t.Errorf("renamed file has inode %d, want %d", ino, inoA)
	}
	buf := make([]byte, 8)
	n, _ := old.ReadAt(buf, 0)
	wantBytes(t, "replaced file through its open descriptor", buf[:n], []byte("BB"))
	if ns := names(t, d); !slices.Equal(ns, []string{"b"}) {
		t.Errorf("listing %v, want [b]", ns)
	}
	// Renaming a name onto itself, and onto another link of the same
	// inode, changes nothing.
	must(t, unix.Rename(b, b))
	must(t, os.Link(b, a))
	must(t, unix.Rename(a, b))
	if ns := names(t, d); !slices.Equal(ns, []string{"a", "b"}) {
		t.Errorf("after rename between two links of one inode: %v, want [a b]", ns)
	}
}

func TestRenameAcrossDirectories(t *testing.T) {
	d := fsDir(t)
	d1, d2 := filepath.Join(d, "d1"), filepath.Join(d, "d2")
	must(t, os.Mkdir(d1, 0o755))
	must(t, os.Mkdir(d2, 0o755))
	data := randBytes(2, 5<<20)
	writeFile(t, filepath.Join(d1, "f"), data)
	must(t, unix.Rename(filepath.Join(d1, "f"), filepath.Join(d2, "g")))
	wantContent(t, filepath.Join(d2, "g"), data)
	if ns := names(t, d1); len(ns) != 0 {
		t.Errorf("source directory still lists %v", ns)
	}

	// A directory moves with its content; its ".." follows.
	must(t, os.MkdirAll(filepath.Join(d1, "sub", "deep"), 0o755))
	writeFile(t, filepath.Join(d1, "sub", "deep", "x"), []byte("x"))
	must(t, unix.Rename(filepath.Join(d1, "sub"), filepath.Join(d2, "moved")))
	wantContent(t, filepath.Join(d2, "moved", "deep", "x"), []byte("x"))
	if stat(t, filepath.Join(d2, "moved", "..")).Ino != stat(t, d2).Ino {
		t.Error(`".." of a moved directory is not its new parent`)
	}
	_, err := os.Stat(filepath.Join(d1, "sub"))
	wantErrno(t, "stat of the moved directory's old name", err, syscall.ENOENT)
}

func TestRenameDirectories(t *testing.T) {
	d := fsDir(t)
	mk := func(p ...string) string {
		path := filepath.Join(append([]string{d}, p...)...)
		must(t, os.MkdirAll(path, 0o755))
		return path
	}
	a := mk("a")
	writeFile(t, filepath.Join(a, "f"), []byte("f"))
	sub := mk("a", "sub")
	empty := mk("empty")
	full := mk("full")
	writeFile(t, filepath.Join(full, "x"), nil)
	file := filepath.Join(d, "file")
	writeFile(t, file, nil)

	wantErrno(t, "rename of a directory into its own subtree", unix.Rename(a, filepath.Join(sub, "a")), syscall.EINVAL)
	wantErrno(t, "rename of a directory onto a non-empty directory", unix.Rename(a, full), syscall.ENOTEMPTY, syscall.EEXIST)
	wantErrno(t, "rename of a directory onto a file", unix.Rename(a, file), syscall.ENOTDIR)
	wantErrno(t, "rename of a file onto a directory", unix.Rename(file, empty), syscall.EISDIR)
	wantErrno(t, "rename of a missing name", unix.Rename(filepath.Join(d, "nope"), filepath.Join(d, "x")), syscall.ENOENT)

	// Onto an empty directory: replaces it.
	must(t, unix.Rename(a, empty))
	wantContent(t, filepath.Join(empty, "f"), []byte("f"))
	if st := stat(t, filepath.Join(empty, "sub")); st.Mode&unix.S_IFMT != unix.S_IFDIR {
		t.Error("sub-directory lost in the rename")
	}
	if ns := names(t, d); !slices.Equal(ns, []string{"empty", "file", "full"}) {
		t.Errorf("listing %v, want [empty file full]", ns)
	}
	// Plain rename within the parent.
	must(t, unix.Rename(empty, filepath.Join(d, "renamed")))
	wantContent(t, filepath.Join(d, "renamed", "f"), []byte("f"))
}
