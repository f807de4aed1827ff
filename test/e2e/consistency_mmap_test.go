package e2e

import (
	"bytes"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestConsistencyPosixMmap: under posix, a file mapped MAP_SHARED on one
// mount keeps read(2) linearizable there (a pwrite on another mount is read
// back at once), the mapping itself catches up once the meta service's
// callback has dropped its pages (asynchronously: polled, bounded), and a
// store through the mapping is read on the other mount as soon as msync
// returned (docs/design/2026-11-24-posix-mmap.md).
func TestConsistencyPosixMmap(t *testing.T) {
	c := startConsistency(t, 2, "posix")
	const n = 4 * consistencyBlockSize
	writeFile(t, c.path(0, "f"), stamped(1, n))

	f1, err := os.OpenFile(c.path(1, "f"), os.O_RDWR, 0)
	must(t, err)
	defer f1.Close()
	m, err := unix.Mmap(int(f1.Fd()), 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatalf("MAP_SHARED under posix: %v", err)
	}
	defer unix.Munmap(m)
	wantBytes(t, "the mapping", m, stamped(1, n))

	f0, err := os.OpenFile(c.path(0, "f"), os.O_RDWR, 0)
	must(t, err)
	defer f0.Close()
	const off = consistencyBlockSize + 4096
	_, err = f0.WriteAt(stamped(2, 4096), off)
	must(t, err)
	got := make([]byte, 4096)
	_, err = f1.ReadAt(got, off)
	must(t, err)
	wantBytes(t, "read(2) on the mapping mount right after the other mount's write", got, stamped(2, 4096))

	deadline := time.Now().Add(30 * time.Second)
	for !bytes.Equal(m[off:off+4096], stamped(2, 4096)) {
		if time.Now().After(deadline) {
			t.Fatalf("the mapping still shows the old content 30 s after the other mount's write")
		}
		time.Sleep(10 * time.Millisecond)
	}

	copy(m[3*consistencyBlockSize:], stamped(3, 8192))
	must(t, unix.Msync(m, unix.MS_SYNC))
	got = make([]byte, 8192)
	_, err = f0.ReadAt(got, 3*consistencyBlockSize)
	must(t, err)
	wantBytes(t, "read(2) on the other mount after msync", got, stamped(3, 8192))
}
