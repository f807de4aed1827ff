package e2e

// POSIX cases about names: files, directories, symlinks, hard links,
// unlink of open files.

import (
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

func TestFiles(t *testing.T) {
	d := fsDir(t)
	p := filepath.Join(d, "f")
	data := []byte("hello, tessera\n")
	writeFile(t, p, data)
	st := stat(t, p)
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Size != int64(len(data)) || st.Nlink != 1 {
		t.Errorf("stat: mode %o size %d nlink %d, want regular, %d, 1", st.Mode, st.Size, st.Nlink, len(data))
	}
	if st.Uid != uint32(os.Geteuid()) || st.Gid != uint32(os.Getegid()) {
		t.Errorf("stat: owner %d:%d, want the creator %d:%d", st.Uid, st.Gid, os.Geteuid(), os.Getegid())
	}
	wantContent(t, p, data)

	// Overwrite in the middle, read through a second descriptor.
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	must(t, err)
	defer f.Close()
	_, err = f.WriteAt([]byte("HELLO"), 0)
	must(t, err)
	wantContent(t, p, []byte("HELLO, tessera\n"))

	_, err = os.OpenFile(filepath.Join(d, "missing"), os.O_RDONLY, 0)
	wantErrno(t, "open of a missing file", err, syscall.ENOENT)
	_, err = os.OpenFile(filepath.Join(p, "x"), os.O_RDONLY, 0)
	wantErrno(t, "open below a regular file", err, syscall.ENOTDIR)
	long := make([]byte, 256)
	for i := range long {
		long[i] = 'a'
	}
	_, err = os.Create(filepath.Join(d, string(long)))
	wantErrno(t, "create with a 256-byte name", err, syscall.ENAMETOOLONG)
	must(t, os.WriteFile(filepath.Join(d, string(long[:255])), nil, 0o644))

	must(t, os.Remove(p))
	_, err = os.Stat(p)
	wantErrno(t, "stat after remove", err, syscall.ENOENT)
}

func TestDirectories(t *testing.T) {
	d := fsDir(t)
	a := filepath.Join(d, "a")
	must(t, os.Mkdir(a, 0o755))
	must(t, os.MkdirAll(filepath.Join(a, "b", "c"), 0o755))
	writeFile(t, filepath.Join(a, "f"), []byte("x"))
	must(t, os.Symlink("f", filepath.Join(a, "l")))

	st := stat(t, a)
	if st.Mode&unix.S_IFMT != unix.S_IFDIR || st.Mode&0o777 != 0o755 {
		t.Errorf("mkdir: mode %o, want a directory 0755", st.Mode)
	}
	wantErrno(t, "mkdir of an existing name", os.Mkdir(a, 0o755), syscall.EEXIST)
	wantErrno(t, "mkdir below a missing directory", os.Mkdir(filepath.Join(d, "no", "x"), 0o755), syscall.ENOENT)

	ents, err := os.ReadDir(a)
	must(t, err)
	got := map[string]os.FileMode{}
	for _, e := range ents {
		got[e.Name()] = e.Type()
	}
	want := map[string]os.FileMode{"b": os.ModeDir, "f": 0, "l": os.ModeSymlink}
	if len(got) != len(want) {
		t.Errorf("readdir: %v, want %v", got, want)
	}
	for n, typ := range want {
		if g, ok := got[n]; !ok || g != typ {
			t.Errorf("readdir: entry %q type %v (present %v), want %v", n, g, ok, typ)
		}
	}
	// "." and ".." resolve.
	if stat(t, filepath.Join(a, "b", "..")).Ino != st.Ino {
		t.Error("a/b/.. is not a")
	}

	wantErrno(t, "rmdir of a non-empty directory", unix.Rmdir(filepath.Join(a, "b")), syscall.ENOTEMPTY, syscall.EEXIST)
	wantErrno(t, "rmdir of a file", unix.Rmdir(filepath.Join(a, "f")), syscall.ENOTDIR)
	wantErrno(t, "unlink of a directory", unix.Unlink(filepath.Join(a, "b")), syscall.EISDIR, syscall.EPERM)
	must(t, os.Remove(filepath.Join(a, "b", "c")))
	must(t, os.Remove(filepath.Join(a, "b")))
	must(t, os.RemoveAll(a))
	if ns := names(t, d); len(ns) != 0 {
		t.Errorf("after removing everything: %v", ns)
	}
}

func TestSymlinks(t *testing.T) {
	d := fsDir(t)
	target := filepath.Join(d, "target")
	writeFile(t, target, []byte("through the link"))
	l := filepath.Join(d, "l")
	must(t, os.Symlink("target", l))

	got, err := os.Readlink(l)
	must(t, err)
	if got != "target" {
		t.Errorf("readlink: %q", got)
	}
	lst := lstat(t, l)
	if lst.Mode&unix.S_IFMT != unix.S_IFLNK || lst.Size != int64(len("target")) {
		t.Errorf("lstat: mode %o size %d, want a symlink of size %d", lst.Mode, lst.Size, len("target"))
	}
	if st := stat(t, l); st.Ino != stat(t, target).Ino {
		t.Error("stat through the link does not reach the target")
	}
	wantContent(t, l, []byte("through the link"))

	// A long target (near PATH_MAX) survives.
	long := make([]byte, 4000)
	for i := range long {
		long[i] = "abc/"[i%4]
	}
	must(t, os.Symlink(string(long), filepath.Join(d, "long")))
	if got, err := os.Readlink(filepath.Join(d, "long")); err != nil || got != string(long) {
		t.Errorf("readlink of a 4000-byte target: %d bytes, %v", len(got), err)
	}

	dangling := filepath.Join(d, "dangling")
	must(t, os.Symlink("nowhere", dangling))
	_, err = os.Stat(dangling)
	wantErrno(t, "stat through a dangling link", err, syscall.ENOENT)
	_, err = unix.Open(l, unix.O_RDONLY|unix.O_NOFOLLOW, 0)
	wantErrno(t, "open O_NOFOLLOW of a link", err, syscall.ELOOP)
	wantErrno(t, "symlink over an existing name", os.Symlink("x", l), syscall.EEXIST)
	_, err = os.Readlink(target)
	wantErrno(t, "readlink of a regular file", err, syscall.EINVAL)

	// Removing the link keeps the target.
	must(t, os.Remove(l))
	wantContent(t, target, []byte("through the link"))
}

func TestHardLinks(t *testing.T) {
	d := fsDir(t)
	a, b := filepath.Join(d, "a"), filepath.Join(d, "sub", "b")
	must(t, os.Mkdir(filepath.Join(d, "sub"), 0o755))
	writeFile(t, a, []byte("one"))
	must(t, os.Link(a, b))

	sa, sb := stat(t, a), stat(t, b)
	if sa.Ino != sb.Ino {
		t.Errorf("links have inodes %d and %d", sa.Ino, sb.Ino)
	}
	if sa.Nlink != 2 || sb.Nlink != 2 {
		t.Errorf("nlink %d, %d, want 2", sa.Nlink, sb.Nlink)
	}
	// Data written through one name is read through the other, also when
	// the second one was opened first.
	fb, err := os.Open(b)
	must(t, err)
	defer fb.Close()
	fa, err := os.OpenFile(a, os.O_WRONLY|os.O_APPEND, 0)
	must(t, err)
	_, err = fa.Write([]byte(" two"))
	must(t, err)
	must(t, fa.Close())
	buf := make([]byte, 64)
	n, _ := fb.ReadAt(buf, 0)
	wantBytes(t, "read through the other link", buf[:n], []byte("one two"))
	// A chmod through one name shows through the other (one inode).
	must(t, os.Chmod(a, 0o600))
	if m := stat(t, b).Mode & 0o777; m != 0o600 {
		t.Errorf("mode via the other link: %o", m)
	}

	wantErrno(t, "link over an existing name", os.Link(a, b), syscall.EEXIST)
	wantErrno(t, "link of a directory", os.Link(filepath.Join(d, "sub"), filepath.Join(d, "dirlink")), syscall.EPERM)

	must(t, os.Remove(a))
	if st := stat(t, b); st.Nlink != 1 {
		t.Errorf("nlink after removing one link: %d, want 1", st.Nlink)
	}
	wantContent(t, b, []byte("one two"))
}

func TestUnlinkOpenFile(t *testing.T) {
	d := fsDir(t)
	p := filepath.Join(d, "f")
	f, err := os.OpenFile(p, os.O_CREATE|os.O_RDWR, 0o644)
	must(t, err)
	defer f.Close()
	_, err = f.Write([]byte("before"))
	must(t, err)
	must(t, os.Remove(p))

	if slices.Contains(names(t, d), "f") {
		t.Error("unlinked file still listed")
	}
	_, err = os.Stat(p)
	wantErrno(t, "stat of the unlinked name", err, syscall.ENOENT)
	var st unix.Stat_t
	must(t, unix.Fstat(int(f.Fd()), &st))
	if st.Nlink != 0 || st.Size != 6 {
		t.Errorf("fstat of the unlinked file: nlink %d size %d, want 0 and 6", st.Nlink, st.Size)
	}
	// Still readable and writable through the descriptor, across a block.
	big := randBytes(1, 5<<20)
	_, err = f.Write(big)
	must(t, err)
	must(t, f.Sync())
	got := make([]byte, 6+len(big))
	n, err := preadFull(f, got, 0)
	must(t, err)
	wantBytes(t, "read of the unlinked file", got[:n], append([]byte("before"), big...))
	must(t, f.Truncate(3))
	n, _ = f.ReadAt(got, 0)
	wantBytes(t, "after ftruncate of the unlinked file", got[:n], []byte("bef"))

	// A new file of the same name is a different file.
	writeFile(t, p, []byte("new"))
	wantContent(t, p, []byte("new"))
	n, _ = f.ReadAt(got, 0)
	wantBytes(t, "old descriptor after the name was reused", got[:n], []byte("bef"))
}
