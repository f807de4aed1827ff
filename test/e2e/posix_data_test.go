package e2e

// POSIX cases about file data: truncation, holes, open flags, sync, files
// larger than 4 GiB.

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

const (
	kib = 1 << 10
	mib = 1 << 20
	gib = 1 << 30
)

// TestTruncate shrinks then extends, by path and on an open descriptor:
// what comes back past the cut must be zeros, also inside a block that
// kept its head, and across block boundaries.
func TestTruncate(t *testing.T) {
	d := fsDir(t)
	data := randBytes(3, 9*mib+123)
	for _, how := range []string{"truncate", "ftruncate"} {
		t.Run(how, func(t *testing.T) {
			p := filepath.Join(d, how)
			writeFile(t, p, data)
			f, err := os.OpenFile(p, os.O_RDWR, 0)
			must(t, err)
			defer f.Close()
			trunc := func(n int64) {
				t.Helper()
				if how == "truncate" {
					must(t, os.Truncate(p, n))
				} else {
					must(t, f.Truncate(n))
				}
				if st := stat(t, p); st.Size != n {
					t.Fatalf("%s to %d: size %d", how, n, st.Size)
				}
				var st unix.Stat_t
				must(t, unix.Fstat(int(f.Fd()), &st))
				if st.Size != n {
					t.Fatalf("%s to %d: fstat size %d", how, n, st.Size)
				}
			}
			check := func(keep, size int64) {
				t.Helper()
				want := make([]byte, size)
				copy(want, data[:keep])
				got := make([]byte, size+10)
				n, err := preadFull(f, got, 0)
				must(t, err)
				wantBytes(t, "through the open descriptor", got[:n], want)
				wantContent(t, p, want)
			}
			cut := int64(4*mib + 3) // just past a block boundary
			trunc(cut)
			check(cut, cut)
			trunc(9 * mib) // extend: zeros from cut on
			check(cut, 9*mib)
			trunc(5)
			trunc(100 * kib)
			check(5, 100*kib)
			trunc(0)
			check(0, 0)
			trunc(8 * mib) // a file of holes only
			check(0, 8*mib)
		})
	}
	_, err := os.Stat(filepath.Join(d, "missing"))
	wantErrno(t, "stat missing", err, syscall.ENOENT)
	wantErrno(t, "truncate of a missing file", os.Truncate(filepath.Join(d, "missing"), 0), syscall.ENOENT)
	wantErrno(t, "truncate to a negative length", os.Truncate(filepath.Join(d, "truncate"), -1), syscall.EINVAL)
}

// TestSparseFile writes at 1 GiB: the hole before reads as zeros.
func TestSparseFile(t *testing.T) {
	d := fsDir(t)
	p := filepath.Join(d, "sparse")
	f, err := os.Create(p)
	must(t, err)
	defer f.Close()
	tail := randBytes(4, 3*mib)
	_, err = f.WriteAt(tail, gib)
	must(t, err)
	must(t, f.Close())

	if st := stat(t, p); st.Size != gib+int64(len(tail)) {
		t.Fatalf("size %d, want %d", st.Size, gib+int64(len(tail)))
	}
	f, err = os.Open(p)
	must(t, err)
	buf := make([]byte, 2*mib)
	for _, off := range []int64{0, 4*mib - 1*mib, 512 * mib, gib - 2*mib} {
		n, err := preadFull(f, buf, off)
		if err != nil || n != len(buf) || !zero(buf) {
			t.Errorf("hole at %d: n=%d err=%v zero=%v", off, n, err, zero(buf[:n]))
		}
	}
	// Across the edge of the data.
	n, err := preadFull(f, buf, gib-mib)
	must(t, err)
	if n != len(buf) || !zero(buf[:mib]) || !bytes.Equal(buf[mib:], tail[:mib]) {
		t.Errorf("read across the end of the hole: wrong bytes")
	}
	got := make([]byte, len(tail)+10)
	n, err = preadFull(f, got, gib)
	must(t, err)
	wantBytes(t, "the data after the hole", got[:n], tail)
}

// TestLargeFile goes beyond 4 GiB: across the 2^32 boundary and at 5 GiB.
func TestLargeFile(t *testing.T) {
	d := fsDir(t)
	p := filepath.Join(d, "large")
	f, err := os.Create(p)
	must(t, err)
	defer f.Close()
	at4 := randBytes(5, 2*mib) // straddles 4 GiB
	at5 := randBytes(6, 3*mib+17)
	off4, off5 := int64(4*gib-mib-5), int64(5*gib)
	_, err = f.WriteAt(at4, off4)
	must(t, err)
	_, err = f.WriteAt(at5, off5)
	must(t, err)
	must(t, f.Sync())
	must(t, f.Close())

	size := off5 + int64(len(at5))
	if st := stat(t, p); st.Size != size {
		t.Fatalf("size %d, want %d", st.Size, size)
	}
	f, err = os.Open(p)
	must(t, err)
	readAt := func(off int64, n int) []byte {
		b := make([]byte, n)
		m, err := preadFull(f, b, off)
		must(t, err)
		return b[:m]
	}
	wantBytes(t, "across 4 GiB", readAt(off4, len(at4)), at4)
	wantBytes(t, "at 5 GiB", readAt(off5, len(at5)+100), at5)
	if b := readAt(4*gib+2*mib, 4*mib); !zero(b) {
		t.Error("hole between 4 and 5 GiB is not zeros")
	}
	// Cut inside the data that straddles 4 GiB.
	must(t, os.Truncate(p, 4*gib+1000))
	if st := stat(t, p); st.Size != 4*gib+1000 {
		t.Errorf("size after truncate %d", st.Size)
	}
	keep := int(4*gib + 1000 - off4)
	wantBytes(t, "after truncating to 4 GiB + 1000", readAt(off4, len(at4)), at4[:keep])
}

func TestOpenFlags(t *testing.T) {
	d := fsDir(t)
	t.Run("O_APPEND", func(t *testing.T) {
		p := filepath.Join(d, "append")
		writeFile(t, p, []byte("0123456789"))
		a1, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
		must(t, err)
		defer a1.Close()
		a2, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
		must(t, err)
		defer a2.Close()
		_, err = a1.Seek(0, 0) // ignored for writes
		must(t, err)
		for i, f := range []*os.File{a1, a2, a1, a2} {
			_, err := f.Write([]byte{'a' + byte(i)})
			must(t, err)
		}
		// A big append that crosses a block boundary.
		big := randBytes(7, 5*mib)
		_, err = a2.Write(big)
		must(t, err)
		wantContent(t, p, append([]byte("0123456789abcd"), big...))
	})
	t.Run("O_TRUNC", func(t *testing.T) {
		p := filepath.Join(d, "trunc")
		writeFile(t, p, randBytes(8, 9*mib))
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_TRUNC, 0)
		must(t, err)
		defer f.Close()
		var st unix.Stat_t
		must(t, unix.Fstat(int(f.Fd()), &st))
		if st.Size != 0 {
			t.Errorf("size right after O_TRUNC: %d", st.Size)
		}
		_, err = f.Write([]byte("short"))
		must(t, err)
		must(t, f.Close())
		wantContent(t, p, []byte("short"))
	})
	t.Run("O_EXCL", func(t *testing.T) {
		p := filepath.Join(d, "excl")
		old := unix.Umask(0o022)
		defer unix.Umask(old)
		f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o640)
		must(t, err)
		f.Close()
		if m := stat(t, p).Mode & 0o7777; m != 0o640 {
			t.Errorf("created with mode %o, want 0640", m)
		}
		_, err = os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		wantErrno(t, "O_CREAT|O_EXCL of an existing file", err, syscall.EEXIST)
		must(t, os.Symlink("nowhere", filepath.Join(d, "dangling")))
		_, err = os.OpenFile(filepath.Join(d, "dangling"), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		wantErrno(t, "O_CREAT|O_EXCL of a dangling symlink", err, syscall.EEXIST)
		// umask applies to creation.
		unix.Umask(0o077)
		f, err = os.OpenFile(filepath.Join(d, "masked"), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o666)
		must(t, err)
		f.Close()
		if m := stat(t, filepath.Join(d, "masked")).Mode & 0o777; m != 0o600 {
			t.Errorf("umask 077, mode 0666: created %o, want 0600", m)
		}
	})
	t.Run("O_RDONLY", func(t *testing.T) {
		p := filepath.Join(d, "ro")
		writeFile(t, p, []byte("ro"))
		f, err := os.Open(p)
		must(t, err)
		defer f.Close()
		_, err = f.Write([]byte("x"))
		wantErrno(t, "write to an O_RDONLY descriptor", err, syscall.EBADF)
		_, err = os.OpenFile(d, os.O_WRONLY, 0)
		wantErrno(t, "open of a directory for writing", err, syscall.EISDIR)
	})
}

func TestFsync(t *testing.T) {
	d := fsDir(t)
	p := filepath.Join(d, "f")
	f, err := os.Create(p)
	must(t, err)
	defer f.Close()
	data := randBytes(9, 6*mib)
	_, err = f.Write(data)
	must(t, err)
	must(t, f.Sync())
	_, err = f.WriteAt([]byte("changed"), 100)
	must(t, err)
	must(t, unix.Fdatasync(int(f.Fd())))
	copy(data[100:], "changed")
	wantContent(t, p, data)

	ro, err := os.Open(p)
	must(t, err)
	defer ro.Close()
	must(t, ro.Sync()) // fsync on a read-only descriptor is allowed

	dir, err := os.Open(d)
	must(t, err)
	defer dir.Close()
	must(t, dir.Sync())
	must(t, unix.Fdatasync(int(dir.Fd())))
	must(t, unix.Syncfs(int(dir.Fd())))
}
