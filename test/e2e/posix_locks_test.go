package e2e

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestFlock: flock(2) locks belong to open file descriptions, so two opens
// in one process exclude each other, and so do two processes.
func TestFlock(t *testing.T) {
	d := fsDir(t)
	p := filepath.Join(d, "f")
	writeFile(t, p, []byte("x"))
	f1, err := os.Open(p)
	must(t, err)
	defer f1.Close()
	f2, err := os.Open(p)
	must(t, err)
	defer f2.Close()
	fd1, fd2 := int(f1.Fd()), int(f2.Fd())

	must(t, unix.Flock(fd1, unix.LOCK_EX))
	wantErrno(t, "LOCK_EX|LOCK_NB on a second descriptor", unix.Flock(fd2, unix.LOCK_EX|unix.LOCK_NB), syscall.EWOULDBLOCK)
	wantErrno(t, "LOCK_SH|LOCK_NB on a second descriptor", unix.Flock(fd2, unix.LOCK_SH|unix.LOCK_NB), syscall.EWOULDBLOCK)
	if e := helper(t, nil, "flock", p).Errno; e != syscall.EWOULDBLOCK {
		t.Errorf("another process, LOCK_EX|LOCK_NB: %v, want EWOULDBLOCK", e)
	}

	// A blocked LOCK_EX gets the lock once it is released.
	got := make(chan error, 1)
	go func() { got <- unix.Flock(fd2, unix.LOCK_EX) }()
	select {
	case err := <-got:
		t.Fatalf("LOCK_EX returned (%v) while another descriptor holds the lock", err)
	case <-time.After(100 * time.Millisecond):
	}
	must(t, unix.Flock(fd1, unix.LOCK_UN))
	select {
	case err := <-got:
		must(t, err)
	case <-time.After(time.Minute): // for a hang only
		t.Fatal("LOCK_EX still blocked a minute after the holder unlocked")
	}
	if e := helper(t, nil, "flock", p).Errno; e != syscall.EWOULDBLOCK {
		t.Errorf("another process while fd2 holds it: %v, want EWOULDBLOCK", e)
	}
	must(t, f2.Close()) // closing releases
	if e := helper(t, nil, "flock", p).Errno; e != 0 {
		t.Errorf("another process after release: %v, want success", e)
	}

	// Shared locks share.
	must(t, unix.Flock(fd1, unix.LOCK_SH))
	f3, err := os.Open(p)
	must(t, err)
	defer f3.Close()
	must(t, unix.Flock(int(f3.Fd()), unix.LOCK_SH|unix.LOCK_NB))
}

// TestFcntlLocks: POSIX record locks belong to the process, so conflicts
// show between processes only (the child is a helper process).
func TestFcntlLocks(t *testing.T) {
	d := fsDir(t)
	p := filepath.Join(d, "f")
	writeFile(t, p, make([]byte, 1000))
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	must(t, err)
	defer f.Close()
	setlk := func(f *os.File, typ int16, start, n int64) error {
		lk := unix.Flock_t{Type: typ, Whence: io.SeekStart, Start: start, Len: n}
		return unix.FcntlFlock(f.Fd(), unix.F_SETLK, &lk)
	}
	child := func(op string, start, n int64, typ string) helperResult {
		return helper(t, nil, op, p, fmt.Sprint(start), fmt.Sprint(n), typ)
	}

	must(t, setlk(f, unix.F_WRLCK, 0, 100))
	if r := child("setlk", 50, 10, "w"); r.Errno != syscall.EAGAIN && r.Errno != syscall.EACCES {
		t.Errorf("child F_SETLK write [50,60) over our write lock [0,100): %v, want EAGAIN", r.Errno)
	}
	if r := child("setlk", 50, 10, "r"); r.Errno != syscall.EAGAIN && r.Errno != syscall.EACCES {
		t.Errorf("child F_SETLK read [50,60) over our write lock: %v, want EAGAIN", r.Errno)
	}
	if r := child("setlk", 100, 100, "w"); r.Errno != 0 {
		t.Errorf("child F_SETLK write [100,200), next to our lock: %v, want success", r.Errno)
	}
	r := child("getlk", 0, 0, "w")
	want := fmt.Sprintf("type=%d pid=%d start=0 len=100", unix.F_WRLCK, os.Getpid())
	if r.Errno != 0 || r.Extra != want {
		t.Errorf("child F_GETLK: %v %q, want %q", r.Errno, r.Extra, want)
	}

	// Within one process, a second descriptor does not conflict.
	f2, err := os.OpenFile(p, os.O_RDWR, 0)
	must(t, err)
	defer f2.Close()
	if err := setlk(f2, unix.F_WRLCK, 50, 10); err != nil {
		t.Errorf("same process, second descriptor, overlapping write lock: %v, want success", err)
	}

	// Downgrade to a read lock: the child can read-lock but not write-lock.
	must(t, setlk(f, unix.F_RDLCK, 0, 100))
	if r := child("setlk", 0, 100, "r"); r.Errno != 0 {
		t.Errorf("child read lock over our read lock: %v, want success", r.Errno)
	}
	if r := child("setlk", 0, 100, "w"); r.Errno != syscall.EAGAIN && r.Errno != syscall.EACCES {
		t.Errorf("child write lock over our read lock: %v, want EAGAIN", r.Errno)
	}

	// Unlock: free for the child.
	must(t, setlk(f, unix.F_UNLCK, 0, 0))
	if r := child("setlk", 0, 0, "w"); r.Errno != 0 {
		t.Errorf("child whole-file write lock after we unlocked: %v, want success", r.Errno)
	}
	if r := child("getlk", 0, 0, "w"); r.Errno != 0 || !strings.HasPrefix(r.Extra, fmt.Sprintf("type=%d ", unix.F_UNLCK)) {
		t.Errorf("child F_GETLK after unlock: %v %q, want type=F_UNLCK", r.Errno, r.Extra)
	}
}
