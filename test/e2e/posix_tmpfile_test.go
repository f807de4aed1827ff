package e2e

// open(O_TMPFILE) (issue 11, item 5).

import (
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestTmpfile: O_TMPFILE makes an unnamed file that reads back what was
// written and shows in no directory; linkat gives it a name (which then
// has the content, nlink 1), unless it was opened with O_EXCL.
func TestTmpfile(t *testing.T) {
	forPolicies(t, func(t *testing.T, d string) {
		data := randBytes(7, 300000)
		fd, err := unix.Open(d, unix.O_TMPFILE|unix.O_RDWR, 0o640)
		if err != nil {
			t.Fatalf("open(O_TMPFILE): %v", err)
		}
		defer func() {
			if fd >= 0 {
				unix.Close(fd)
			}
		}()
		if n, err := unix.Pwrite(fd, data, 0); err != nil || n != len(data) {
			t.Fatalf("write to the tmpfile: %d, %v", n, err)
		}
		got := make([]byte, len(data))
		if n, err := unix.Pread(fd, got, 0); err != nil || n != len(data) {
			t.Fatalf("read of the tmpfile: %d, %v", n, err)
		}
		wantBytes(t, "tmpfile content", got, data)
		var st unix.Stat_t
		must(t, unix.Fstat(fd, &st))
		if st.Nlink != 0 || st.Size != int64(len(data)) || st.Mode != syscall.S_IFREG|0o640 {
			t.Errorf("fstat of the tmpfile: nlink %d, size %d, mode %o; want 0, %d, %o",
				st.Nlink, st.Size, st.Mode, len(data), syscall.S_IFREG|0o640)
		}
		if n := names(t, d); len(n) != 0 {
			t.Errorf("the directory lists %v with only a tmpfile in it", n)
		}
		named := filepath.Join(d, "named")
		must(t, unix.Linkat(fd, "", unix.AT_FDCWD, named, unix.AT_EMPTY_PATH))
		must(t, unix.Close(fd))
		fd = -1
		wantContent(t, named, data)
		if st := stat(t, named); st.Nlink != 1 {
			t.Errorf("a linked tmpfile has nlink %d, want 1", st.Nlink)
		}

		ex, err := unix.Open(d, unix.O_TMPFILE|unix.O_WRONLY|unix.O_EXCL, 0o600)
		if err != nil {
			t.Fatalf("open(O_TMPFILE|O_EXCL): %v", err)
		}
		defer unix.Close(ex)
		err = unix.Linkat(ex, "", unix.AT_FDCWD, filepath.Join(d, "never"), unix.AT_EMPTY_PATH)
		wantErrno(t, "linkat of an O_EXCL tmpfile", err, syscall.ENOENT)
		if n := names(t, d); len(n) != 1 || n[0] != "named" {
			t.Errorf("the directory lists %v, want [named]", n)
		}
	})
}
