package e2e

import (
	"bytes"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"tessera/test/cluster"
)

// TestDiskFull: with the block servers' file system full, a writer gets an
// error (ENOSPC, or EIO at close) instead of hanging; what was written and
// synced before is intact; the file being written never reads back as
// zeros where its data was; fsck stays clean; `tessera up` stops on SIGTERM
// (the cleanup checks the stop contract). The data lives on a 96 MiB tmpfs.
func TestDiskFull(t *testing.T) {
	needBinary(t)
	small := filepath.Join(t.TempDir(), "small")
	if err := os.MkdirAll(small, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", small, "tmpfs", 0, "size=96m"); err != nil {
		t.Skipf("cannot mount a tmpfs: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(small, syscall.MNT_DETACH) })
	c := startCluster(t, func(o *cluster.Options) {
		o.DataDir = filepath.Join(small, "data")
		o.Args = append(o.Args, "--replicas", "1")
	})
	early := make([]byte, 16<<20)
	rand.Read(early)
	writeFileSync(t, filepath.Join(c.Mount(), "early"), early)

	// 192 MiB onto what is left of 96 MiB, as dd conv=fsync does it.
	big := filepath.Join(c.Mount(), "big")
	f, err := os.OpenFile(big, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 1<<20)
	var written []byte
	var werr error
	for i := 0; i < 192 && werr == nil; i++ {
		rand.Read(chunk)
		var n int
		n, werr = f.Write(chunk)
		written = append(written, chunk[:n]...)
	}
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		t.Fatal("writing 192 MiB onto a 96 MiB store succeeded")
	}
	if !errors.Is(werr, syscall.ENOSPC) && !errors.Is(werr, syscall.EIO) {
		t.Fatalf("writer's error: %v; want ENOSPC or EIO", werr)
	}
	t.Logf("writer stopped after %d MiB: %v", len(written)>>20, werr)

	got, err := os.ReadFile(filepath.Join(c.Mount(), "early"))
	if err != nil || !bytes.Equal(got, early) {
		t.Fatalf("file written before the disk filled: %d bytes, err %v, equal %v", len(got), err, bytes.Equal(got, early))
	}
	// Whatever of big was committed is what was written: no zeros in
	// place of data, no bytes beyond what the writer wrote.
	got, err = os.ReadFile(big)
	if err != nil {
		t.Fatalf("read %s: %v", big, err)
	}
	if len(got) > len(written) || !bytes.Equal(got, written[:len(got)]) {
		t.Fatalf("the file written as the disk filled reads %d bytes that are not what was written (first difference at %d of %d written)",
			len(got), firstDifference(got, written), len(written))
	}
	if err := os.Remove(big); err != nil {
		t.Fatal(err)
	}
	fsckClean(t, c)
}

func firstDifference(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
