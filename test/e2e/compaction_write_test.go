package e2e

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"tessera/test/cluster"
)

// TestWriteAfterCompactionAndReclaim: a small fsync'd write into a block
// of a file held open (a database), made after the block was compacted and
// its pieces reclaimed, reads back after a restart. Before the fix the
// fsync succeeded over removed pieces and the read after the restart
// failed with EIO ("block not found" on every server). The sleep waits for
// the daemons' own timers (compaction after 5 s of rest, reclaim 2 s after
// the release); on a machine too busy for them to run in time the write is
// merely not the case under test, never a false failure.
func TestWriteAfterCompactionAndReclaim(t *testing.T) {
	c := startCluster(t, func(o *cluster.Options) {
		o.Args = append(o.Args, "--reclaim-after", "2s", "--gc-interval", "0")
	})
	const size = 4 * mib
	p := filepath.Join(c.Mount(), "f")
	want := randBytes(60, size)
	writeFileSync(t, p, want)
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	put := func(i int, off int) {
		chunk := randBytes(uint64(1000+i), 64*kib)
		if _, err := f.WriteAt(chunk, int64(off)); err != nil {
			t.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
		copy(want[off:], chunk)
	}
	put(0, 100000)
	put(1, 900000)
	time.Sleep(12 * time.Second) // compacted after 5 s, pieces reclaimed 2 s later
	put(2, 2000000)
	restart(t, c)
	got, err := os.ReadFile(p)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("after the restart: %d bytes, err %v, first difference at %d", len(got), err, firstDifference(got, want))
	}
	fsckClean(t, c)
}
