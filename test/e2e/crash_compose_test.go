package e2e

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"tessera/test/cluster"
)

// TestCrashAcrossCompactionAndReclaim: small overwrites with fsync (each
// committed as a composed block: patches over the committed block) go on
// while the writer's client stores rested blocks whole and the reclaimer
// (2 s window) removes what no recipe or composition needs; the daemon is
// killed -9 in the middle. After a restart every fsync'd write reads back,
// fsck is clean, and once reading the file has compacted what the killed
// run left composed and the reclaimer has run, still so.
func TestCrashAcrossCompactionAndReclaim(t *testing.T) {
	c := startCluster(t, func(o *cluster.Options) {
		o.Args = append(o.Args, "--reclaim-after", "2s", "--gc-interval", "0")
	})
	const size = 16 * mib
	p := filepath.Join(c.Mount(), "f")
	want := randBytes(60, size)
	writeFileSync(t, p, want)

	var mu sync.Mutex // guards want: fsync'd content
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		f, err := os.OpenFile(p, os.O_RDWR, 0)
		if err != nil {
			return
		}
		defer f.Close()
		rng := rand.New(rand.NewPCG(61, 62))
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			off := rng.IntN(size - 64*kib)
			chunk := randBytes(uint64(1000+i), 64*kib)
			if _, err := f.WriteAt(chunk, int64(off)); err != nil {
				return
			}
			if err := f.Sync(); err != nil {
				return
			}
			mu.Lock()
			copy(want[off:], chunk)
			mu.Unlock()
			if i%20 == 19 {
				// Let blocks rest past the compaction delay (5 s) now and
				// then, so compactions and releases run mid-churn.
				time.Sleep(6 * time.Second)
			}
		}
	}()
	time.Sleep(15 * time.Second)
	must(t, c.Kill9())
	close(stop)
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the writer is still blocked 30 s after the daemon was killed")
	}
	restart(t, c)
	check := func(when string) {
		t.Helper()
		got, err := os.ReadFile(p)
		mu.Lock()
		defer mu.Unlock()
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s: %d bytes, err %v, first difference at %d", when, len(got), err, firstDifference(got, want))
		}
	}
	check("after the restart")
	fsckClean(t, c)
	// The read assembled what stayed composed; 5 s later it is stored
	// whole, 2 s after that the pieces may go.
	time.Sleep(10 * time.Second)
	restart(t, c) // a fresh client: nothing cached
	check("after compaction and reclamation")
	fsckClean(t, c)
}
