package e2e

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// randBytes returns n reproducible pseudo-random bytes.
func randBytes(seed uint64, n int) []byte {
	var s [32]byte
	for i := range 8 {
		s[i] = byte(seed >> (8 * i))
	}
	b := make([]byte, n)
	_, _ = rand.NewChaCha8(s).Read(b)
	return b
}

// isErrno reports whether err is one of the errnos.
func isErrno(err error, want ...syscall.Errno) bool {
	var en syscall.Errno
	return errors.As(err, &en) && slices.Contains(want, en)
}

// wantErrno fails unless err is one of the errnos.
func wantErrno(t testing.TB, what string, err error, want ...syscall.Errno) {
	t.Helper()
	if !isErrno(err, want...) {
		t.Errorf("%s: got %v, want %v", what, err, want)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func writeFile(t testing.TB, path string, data []byte) {
	t.Helper()
	must(t, os.WriteFile(path, data, 0o644))
}

// wantContent fails unless the file at path holds exactly want.
func wantContent(t testing.TB, path string, want []byte) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Errorf("read %s: %v", path, err)
		return
	}
	wantBytes(t, path, got, want)
}

// wantBytes compares and reports the first difference.
func wantBytes(t testing.TB, what string, got, want []byte) {
	t.Helper()
	if bytes.Equal(got, want) {
		return
	}
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	t.Errorf("%s: got %d bytes, want %d; first difference at offset %d", what, len(got), len(want), i)
}

func stat(t testing.TB, path string) unix.Stat_t {
	t.Helper()
	var st unix.Stat_t
	must(t, unix.Stat(path, &st))
	return st
}

func lstat(t testing.TB, path string) unix.Stat_t {
	t.Helper()
	var st unix.Stat_t
	must(t, unix.Lstat(path, &st))
	return st
}

// names lists a directory (without . and ..), sorted.
func names(t testing.TB, dir string) []string {
	t.Helper()
	f, err := os.Open(dir)
	must(t, err)
	defer f.Close()
	ns, err := f.Readdirnames(-1)
	must(t, err)
	slices.Sort(ns)
	return ns
}

// zero reports whether b is all zeros.
func zero(b []byte) bool {
	for len(b) >= 8 {
		if b[0]|b[1]|b[2]|b[3]|b[4]|b[5]|b[6]|b[7] != 0 {
			return false
		}
		b = b[8:]
	}
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// preadFull reads len(b) bytes at off (short only at EOF).
func preadFull(f *os.File, b []byte, off int64) (int, error) {
	n, err := f.ReadAt(b, off)
	if err != nil && n < len(b) && errors.Is(err, io.EOF) {
		return n, nil
	}
	return n, err
}
