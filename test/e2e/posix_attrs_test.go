package e2e

// POSIX cases about attributes: mode, owner, times, xattrs, statfs.

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestChmod(t *testing.T) {
	d := fsDir(t)
	p := filepath.Join(d, "f")
	writeFile(t, p, []byte("x"))
	for _, m := range []uint32{0o640, 0o000, 0o4755, 0o2711, 0o1777, 0o644} {
		must(t, unix.Chmod(p, m))
		if got := stat(t, p).Mode; got&0o7777 != m || got&unix.S_IFMT != unix.S_IFREG {
			t.Errorf("chmod %o: mode %o", m, got)
		}
	}
	f, err := os.Open(p)
	must(t, err)
	defer f.Close()
	before := stat(t, p).Ctim
	time.Sleep(20 * time.Millisecond) // ctime granularity, not polling
	must(t, unix.Fchmod(int(f.Fd()), 0o600))
	st := stat(t, p)
	if st.Mode&0o7777 != 0o600 {
		t.Errorf("fchmod 0600: mode %o", st.Mode)
	}
	if unix.TimespecToNsec(st.Ctim) <= unix.TimespecToNsec(before) {
		t.Errorf("chmod did not advance ctime (%v -> %v)", before, st.Ctim)
	}
	// A directory's mode.
	must(t, unix.Chmod(d, 0o711))
	if m := stat(t, d).Mode & 0o7777; m != 0o711 {
		t.Errorf("chmod of a directory: %o", m)
	}
	must(t, unix.Chmod(d, 0o755))
}

func TestChown(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chown needs root")
	}
	d := fsDir(t)
	p := filepath.Join(d, "f")
	writeFile(t, p, []byte("x"))
	must(t, os.Chown(p, 1000, 1000))
	if st := stat(t, p); st.Uid != 1000 || st.Gid != 1000 {
		t.Errorf("chown 1000:1000: %d:%d", st.Uid, st.Gid)
	}
	must(t, os.Chown(p, -1, 2000))
	if st := stat(t, p); st.Uid != 1000 || st.Gid != 2000 {
		t.Errorf("chown -1:2000: %d:%d, want 1000:2000", st.Uid, st.Gid)
	}
	f, err := os.Open(p)
	must(t, err)
	defer f.Close()
	must(t, f.Chown(0, -1))
	if st := stat(t, p); st.Uid != 0 || st.Gid != 2000 {
		t.Errorf("fchown 0:-1: %d:%d, want 0:2000", st.Uid, st.Gid)
	}
	// lchown changes the link, not its target.
	l := filepath.Join(d, "l")
	must(t, os.Symlink("f", l))
	must(t, os.Lchown(l, 3000, 3000))
	if st := lstat(t, l); st.Uid != 3000 || st.Gid != 3000 {
		t.Errorf("lchown: link is %d:%d", st.Uid, st.Gid)
	}
	if st := stat(t, p); st.Uid != 0 {
		t.Errorf("lchown changed the target's owner to %d", st.Uid)
	}
	// A directory's owner.
	sub := filepath.Join(d, "sub")
	must(t, os.Mkdir(sub, 0o755))
	must(t, os.Chown(sub, 1000, 1000))
	if st := stat(t, sub); st.Uid != 1000 || st.Gid != 1000 {
		t.Errorf("chown of a directory: %d:%d", st.Uid, st.Gid)
	}
}

func TestUtimens(t *testing.T) {
	d := fsDir(t)
	p := filepath.Join(d, "f")
	writeFile(t, p, []byte("x"))
	ts := func(sec, nsec int64) unix.Timespec { return unix.Timespec{Sec: sec, Nsec: nsec} }
	set := func(path string, atime, mtime unix.Timespec, flags int) {
		t.Helper()
		must(t, unix.UtimesNanoAt(unix.AT_FDCWD, path, []unix.Timespec{atime, mtime}, flags))
	}

	// Exact nanoseconds, also before 1970 and after 2038.
	for _, c := range [][2]unix.Timespec{
		{ts(1234567890, 123456789), ts(1500000000, 987654321)},
		{ts(-1000, 1), ts(4102444800, 999999999)},
	} {
		set(p, c[0], c[1], 0)
		st := stat(t, p)
		if st.Atim != c[0] || st.Mtim != c[1] {
			t.Errorf("utimensat(%v, %v): atime %v mtime %v", c[0], c[1], st.Atim, st.Mtim)
		}
	}

	// UTIME_OMIT leaves a time alone; UTIME_NOW takes the clock.
	set(p, ts(1000, 1), ts(2000, 2), 0)
	set(p, ts(0, unix.UTIME_OMIT), ts(3000, 3), 0)
	if st := stat(t, p); st.Atim != ts(1000, 1) || st.Mtim != ts(3000, 3) {
		t.Errorf("atime UTIME_OMIT: atime %v mtime %v, want 1000.000000001 and 3000.000000003", st.Atim, st.Mtim)
	}
	before := time.Now()
	set(p, ts(0, unix.UTIME_NOW), ts(0, unix.UTIME_OMIT), 0)
	after := time.Now()
	st := stat(t, p)
	if st.Mtim != ts(3000, 3) {
		t.Errorf("mtime UTIME_OMIT: mtime %v, want 3000.000000003", st.Mtim)
	}
	at := time.Unix(st.Atim.Unix())
	if at.Before(before.Add(-time.Second)) || at.After(after.Add(time.Second)) {
		t.Errorf("atime UTIME_NOW: %v, not within [%v, %v]", at, before, after)
	}
	set(p, ts(0, unix.UTIME_NOW), ts(0, unix.UTIME_NOW), 0)
	if st := stat(t, p); time.Unix(st.Mtim.Unix()).Before(before.Add(-time.Second)) {
		t.Errorf("mtime UTIME_NOW: %v", st.Mtim)
	}

	// A write moves mtime to now.
	set(p, ts(1000, 0), ts(1000, 0), 0)
	must(t, os.WriteFile(p, []byte("y"), 0o644))
	if st := stat(t, p); st.Mtim.Sec < before.Unix()-1 {
		t.Errorf("mtime after a write: %v", st.Mtim)
	}

	// AT_SYMLINK_NOFOLLOW sets the link's times, not the target's.
	l := filepath.Join(d, "l")
	must(t, os.Symlink("f", l))
	set(p, ts(5000, 5), ts(5000, 5), 0)
	set(l, ts(6000, 6), ts(6000, 6), unix.AT_SYMLINK_NOFOLLOW)
	if st := lstat(t, l); st.Mtim != ts(6000, 6) {
		t.Errorf("link mtime %v, want 6000.000000006", st.Mtim)
	}
	if st := stat(t, p); st.Mtim != ts(5000, 5) {
		t.Errorf("target mtime %v changed by the link's utimensat", st.Mtim)
	}
	// A directory's times.
	set(d, ts(7000, 7), ts(7000, 7), 0)
	if st := stat(t, d); st.Mtim != ts(7000, 7) {
		t.Errorf("directory mtime %v", st.Mtim)
	}
}

// TestFutimensBeforeClose is what tar does with each file it extracts:
// write, futimens, fchown, fchmod, close. The time set must survive the
// close that commits the writes; a write after it moves mtime again.
func TestFutimensBeforeClose(t *testing.T) {
	d := fsDir(t)
	mtime := unix.Timespec{Sec: 1500000000, Nsec: 0}
	omit := unix.Timespec{Nsec: unix.UTIME_OMIT}
	for _, n := range []int{100, 20000, 200000} {
		p := filepath.Join(d, fmt.Sprintf("f%d", n))
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		must(t, err)
		_, err = f.Write(bytes.Repeat([]byte("t"), n))
		must(t, err)
		must(t, unix.UtimesNanoAt(int(f.Fd()), "", []unix.Timespec{omit, mtime}, unix.AT_EMPTY_PATH))
		must(t, f.Chmod(0o644))
		if st := stat(t, p); st.Mtim != mtime {
			t.Errorf("%d bytes: mtime %v before close, want %v", n, st.Mtim, mtime)
		}
		must(t, f.Close())
		if st := stat(t, p); st.Mtim != mtime || st.Size != int64(n) {
			t.Errorf("%d bytes: mtime %v, size %d after close, want %v, %d", n, st.Mtim, st.Size, mtime, n)
		}
	}
	p := filepath.Join(d, "later")
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	must(t, err)
	_, err = f.Write([]byte("a"))
	must(t, err)
	must(t, unix.UtimesNanoAt(int(f.Fd()), "", []unix.Timespec{omit, mtime}, unix.AT_EMPTY_PATH))
	_, err = f.Write([]byte("b"))
	must(t, err)
	must(t, f.Close())
	if st := stat(t, p); st.Mtim.Sec <= mtime.Sec {
		t.Errorf("a write after futimens: mtime %v, want now", st.Mtim)
	}
}

func TestXattrs(t *testing.T) {
	d := fsDir(t)
	p := filepath.Join(d, "f")
	writeFile(t, p, []byte("x"))
	get := func(path, name string) ([]byte, error) {
		n, err := unix.Getxattr(path, name, nil) // size query
		if err != nil {
			return nil, err
		}
		b := make([]byte, n)
		n, err = unix.Getxattr(path, name, b)
		return b[:n], err
	}
	list := func(path string) []string {
		t.Helper()
		n, err := unix.Listxattr(path, nil)
		must(t, err)
		b := make([]byte, n)
		n, err = unix.Listxattr(path, b)
		must(t, err)
		var out []string
		for _, s := range strings.Split(string(b[:n]), "\x00") {
			if strings.HasPrefix(s, "user.") {
				out = append(out, s)
			}
		}
		slices.Sort(out)
		return out
	}

	err := unix.Setxattr(p, "user.a", []byte("one"), 0)
	if err == syscall.EOPNOTSUPP {
		t.Fatalf("user xattrs are not supported here: %v", err)
	}
	must(t, err)
	if v, err := get(p, "user.a"); err != nil || string(v) != "one" {
		t.Errorf("get user.a: %q %v", v, err)
	}
	wantErrno(t, "XATTR_CREATE of an existing name", unix.Setxattr(p, "user.a", []byte("two"), unix.XATTR_CREATE), syscall.EEXIST)
	wantErrno(t, "XATTR_REPLACE of a missing name", unix.Setxattr(p, "user.b", []byte("two"), unix.XATTR_REPLACE), syscall.ENODATA)
	must(t, unix.Setxattr(p, "user.a", []byte("two"), unix.XATTR_REPLACE))
	must(t, unix.Setxattr(p, "user.b", nil, unix.XATTR_CREATE)) // empty value
	big := bytes.Repeat([]byte("v"), 4000)
	must(t, unix.Setxattr(p, "user.big", big, 0))
	if v, err := get(p, "user.a"); err != nil || string(v) != "two" {
		t.Errorf("get user.a after replace: %q %v", v, err)
	}
	if v, err := get(p, "user.b"); err != nil || len(v) != 0 {
		t.Errorf("get empty user.b: %q %v", v, err)
	}
	if v, err := get(p, "user.big"); err != nil || !bytes.Equal(v, big) {
		t.Errorf("get user.big: %d bytes, %v", len(v), err)
	}
	if got := list(p); !slices.Equal(got, []string{"user.a", "user.b", "user.big"}) {
		t.Errorf("list: %v", got)
	}
	small := make([]byte, 1)
	_, err = unix.Getxattr(p, "user.a", small)
	wantErrno(t, "getxattr into a too small buffer", err, syscall.ERANGE)

	must(t, unix.Removexattr(p, "user.a"))
	_, err = get(p, "user.a")
	wantErrno(t, "get after remove", err, syscall.ENODATA)
	wantErrno(t, "remove of a missing name", unix.Removexattr(p, "user.a"), syscall.ENODATA)
	if got := list(p); !slices.Equal(got, []string{"user.b", "user.big"}) {
		t.Errorf("list after remove: %v", got)
	}

	// Directories carry xattrs too, and a rename keeps them.
	must(t, unix.Setxattr(d, "user.dir", []byte("d"), 0))
	if v, err := get(d, "user.dir"); err != nil || string(v) != "d" {
		t.Errorf("directory xattr: %q %v", v, err)
	}
	must(t, os.Rename(p, p+"2"))
	if v, err := get(p+"2", "user.big"); err != nil || !bytes.Equal(v, big) {
		t.Errorf("xattr after rename: %d bytes, %v", len(v), err)
	}
}

func TestStatfs(t *testing.T) {
	d := fsDir(t)
	var s unix.Statfs_t
	must(t, unix.Statfs(d, &s))
	t.Logf("statfs: type %#x bsize %d frsize %d blocks %d bfree %d bavail %d files %d ffree %d namelen %d",
		s.Type, s.Bsize, s.Frsize, s.Blocks, s.Bfree, s.Bavail, s.Files, s.Ffree, s.Namelen)
	if s.Bsize <= 0 || s.Blocks == 0 || s.Bfree > s.Blocks || s.Bavail > s.Blocks {
		t.Errorf("statfs block counts are not sane")
	}
	if s.Files > 0 && s.Ffree > s.Files {
		t.Errorf("statfs: ffree %d > files %d", s.Ffree, s.Files)
	}
	if s.Namelen < 255 {
		t.Errorf("statfs: namelen %d, want at least 255", s.Namelen)
	}
	f, err := os.Open(d)
	must(t, err)
	defer f.Close()
	must(t, unix.Fstatfs(int(f.Fd()), &s))
}
