package e2e

// POSIX details that depend on how the mount opens a file, checked as
// pjdfstest would, under the default `session` policy (the kernel's page
// cache) and under `posix` (direct I/O): truncate times, shared mmap, and
// the set-id bits a write by another user clears (issue 11, items 3 and 4).

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// detailPolicies are the policies the checks run under: one that keeps the
// kernel's page cache, one whose files open with direct I/O.
var detailPolicies = []string{"session", "posix"}

// forPolicies runs check once per detail policy, each in a fresh directory
// (world-searchable, so another uid can reach it) carrying that policy.
func forPolicies(t *testing.T, check func(t *testing.T, dir string)) {
	base := fsDir(t)
	must(t, os.Chmod(base, 0o755))
	for _, p := range detailPolicies {
		t.Run(p, func(t *testing.T) {
			d := filepath.Join(base, p)
			must(t, os.Mkdir(d, 0o755))
			must(t, os.Chmod(d, 0o755))
			if err := unix.Setxattr(d, policyXattr, []byte(p), 0); err != nil && os.Getenv(envDir) == "" {
				t.Fatalf("setting policy %s: %v", p, err)
			}
			check(t, d)
		})
	}
}

// TestTruncateTimes: every truncate changes mtime and ctime, shrinking,
// growing or to the same size, by path, by descriptor and by O_TRUNC (ext4
// does so in every case; the kernel leaves it to a FUSE file system).
func TestTruncateTimes(t *testing.T) {
	old := unix.Timespec{Sec: 1500000000}
	cases := []struct {
		name string
		size int
		op   func(p string) error
		want int64
	}{
		{"truncate shrink", 10000, func(p string) error { return unix.Truncate(p, 100) }, 100},
		{"truncate grow", 100, func(p string) error { return unix.Truncate(p, 300000) }, 300000},
		{"truncate same size", 100, func(p string) error { return unix.Truncate(p, 100) }, 100},
		{"ftruncate to 0", 5000, func(p string) error { return withFd(p, os.O_RDWR, func(fd int) error { return unix.Ftruncate(fd, 0) }) }, 0},
		{"ftruncate grow", 5, func(p string) error {
			return withFd(p, os.O_RDWR, func(fd int) error { return unix.Ftruncate(fd, 70000) })
		}, 70000},
		{"open O_TRUNC", 5000, func(p string) error { return withFd(p, os.O_WRONLY|os.O_TRUNC, nil) }, 0},
		{"open O_CREAT|O_TRUNC", 5000, func(p string) error { return withFd(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, nil) }, 0},
		{"open O_CREAT|O_TRUNC of an empty file", 0, func(p string) error { return withFd(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, nil) }, 0},
	}
	forPolicies(t, func(t *testing.T, d string) {
		for i, c := range cases {
			p := filepath.Join(d, "f"+strconv.Itoa(i))
			writeFile(t, p, bytes.Repeat([]byte("t"), c.size))
			must(t, unix.UtimesNano(p, []unix.Timespec{old, old}))
			before := stat(t, p).Ctim
			if err := c.op(p); err != nil {
				t.Errorf("%s: %v", c.name, err)
				continue
			}
			st := stat(t, p)
			if st.Size != c.want {
				t.Errorf("%s: size %d, want %d", c.name, st.Size, c.want)
			}
			if st.Mtim == old {
				t.Errorf("%s: mtime left at %v", c.name, st.Mtim)
			}
			if unix.TimespecToNsec(st.Ctim) < unix.TimespecToNsec(before) {
				t.Errorf("%s: ctime went back from %v to %v", c.name, before, st.Ctim)
			}
		}
	})
}

// withFd opens p with flags, runs f on the descriptor (if any) and closes it.
func withFd(p string, flags int, f func(fd int) error) error {
	fd, err := unix.Open(p, flags, 0o644)
	if err != nil {
		return err
	}
	if f != nil {
		err = f(fd)
	}
	if cerr := unix.Close(fd); err == nil {
		err = cerr
	}
	return err
}

// TestSharedMmap: MAP_SHARED works under every policy, read-only and
// read-write; what is stored through a mapping is read back by read(2)
// after msync, and what write(2) stored is seen through a mapping.
func TestSharedMmap(t *testing.T) {
	const n = 3 * 4096
	forPolicies(t, func(t *testing.T, d string) {
		p := filepath.Join(d, "m")
		writeFile(t, p, bytes.Repeat([]byte{'a'}, n))

		ro, err := os.Open(p)
		must(t, err)
		defer ro.Close()
		m, err := unix.Mmap(int(ro.Fd()), 0, n, unix.PROT_READ, unix.MAP_SHARED)
		if err != nil {
			t.Fatalf("read-only MAP_SHARED: %v", err)
		}
		wantBytes(t, "read-only shared mapping", m, bytes.Repeat([]byte{'a'}, n))
		must(t, unix.Munmap(m))

		rw, err := os.OpenFile(p, os.O_RDWR, 0)
		must(t, err)
		defer rw.Close()
		m, err = unix.Mmap(int(rw.Fd()), 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
		if err != nil {
			t.Fatalf("read-write MAP_SHARED: %v", err)
		}
		defer unix.Munmap(m)
		copy(m[4000:], "through the mapping")
		must(t, unix.Msync(m, unix.MS_SYNC))
		want := bytes.Repeat([]byte{'a'}, n)
		copy(want[4000:], "through the mapping")
		wantContent(t, p, want)

		_, err = rw.WriteAt([]byte("through write"), 9000)
		must(t, err)
		copy(want[9000:], "through write")
		wantBytes(t, "the mapping after write(2)", m, want)

		// A mapping outlives its descriptor: stores after the close are
		// written back at msync and munmap.
		f, err := os.OpenFile(p, os.O_RDWR, 0)
		must(t, err)
		m2, err := unix.Mmap(int(f.Fd()), 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
		must(t, err)
		must(t, f.Close())
		copy(m2[100:], "after close")
		must(t, unix.Msync(m2, unix.MS_SYNC))
		must(t, unix.Munmap(m2))
		copy(want[100:], "after close")
		wantContent(t, p, want)
	})
}

// TestWriteClearsSetID is pjdfstest chmod/12.t: a write by a user other
// than the owner (no CAP_FSETID) clears the set-user-ID bit, and the
// set-group-ID bit when the file is group-executable, as fstat on the
// writer's descriptor and a later stat show; the other bits stay.
func TestWriteClearsSetID(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a child as uid 65534")
	}
	cases := []struct{ mode, want uint32 }{
		{0o4777, 0o777},
		{0o2777, 0o777},
		{0o6777, 0o777},
		{0o2767, 0o2767}, // set-group-ID without group execute is a locking mark: kept
		{0o0777, 0o777},
	}
	nobody := &syscall.Credential{Uid: 65534, Gid: 65534}
	forPolicies(t, func(t *testing.T, d string) {
		for i, c := range cases {
			p := filepath.Join(d, "s"+strconv.Itoa(i))
			writeFile(t, p, nil)
			must(t, os.Chmod(p, os.FileMode(c.mode&0o777)|modeBits(c.mode)))
			if got := stat(t, p).Mode & 0o7777; got != c.mode {
				t.Fatalf("chmod %o: mode %o", c.mode, got)
			}
			res := helper(t, nobody, "writestat", p)
			if res.Errno != 0 {
				t.Fatalf("mode %o: write as uid 65534: %v", c.mode, res.Errno)
			}
			if want := strconv.FormatUint(uint64(c.want), 8); res.Extra != want {
				t.Errorf("mode %o: fstat after a write by uid 65534: %s, want %s", c.mode, res.Extra, want)
			}
			if got := stat(t, p).Mode & 0o7777; got != c.want {
				t.Errorf("mode %o after a write by uid 65534: %o, want %o", c.mode, got, c.want)
			}
		}
	})
}

// modeBits turns the set-id and sticky bits of a numeric mode into
// os.FileMode's flags.
func modeBits(m uint32) os.FileMode {
	var fm os.FileMode
	if m&syscall.S_ISUID != 0 {
		fm |= os.ModeSetuid
	}
	if m&syscall.S_ISGID != 0 {
		fm |= os.ModeSetgid
	}
	if m&syscall.S_ISVTX != 0 {
		fm |= os.ModeSticky
	}
	return fm
}
