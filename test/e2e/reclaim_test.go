package e2e

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"tessera/test/cluster"
)

// TestReclaimAfterChurn: small overwrites with fsync (each commit supersedes
// a whole block under the default policy), then a deleted file. With the
// full collection off, the reclaimer alone brings stored bytes down to at
// most 1.2 x replicas x live bytes (+ one block per replica: the issue's
// bound); the live file reads back, fsck is clean, and so after a restart.
// Two copies of each block, so that every removal goes to several servers.
func TestReclaimAfterChurn(t *testing.T) {
	c := startCluster(t, func(o *cluster.Options) {
		o.Args = append(o.Args, "--replicas", "2", "--reclaim-after", "2s", "--gc-interval", "0")
	})
	const size = 8 * mib
	p := filepath.Join(c.Mount(), "f")
	want := randBytes(40, size)
	writeFileSync(t, p, want)
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	must(t, err)
	rng := rand.New(rand.NewPCG(41, 42))
	for i := range 60 {
		off := rng.IntN(size - 64<<10)
		chunk := randBytes(uint64(100+i), 64<<10)
		_, err := f.WriteAt(chunk, int64(off))
		must(t, err)
		must(t, f.Sync())
		copy(want[off:], chunk)
	}
	must(t, f.Close())
	gone := filepath.Join(c.Mount(), "gone")
	writeFileSync(t, gone, randBytes(43, 8*mib))
	must(t, os.Remove(gone))

	peak := readUsage(t, c)
	replicas := statusInt(t, c, "replicas")
	const blockSize = 4 * mib
	limit := size*replicas*12/10 + replicas*blockSize
	if peak.stored <= limit {
		t.Fatalf("stored %d bytes right after the churn, already within the bound %d: the test shows nothing", peak.stored, limit)
	}
	// The window is 2 s; the deadline only stops a test that would
	// otherwise wait forever.
	deadline := time.Now().Add(3 * time.Minute)
	for {
		u := readUsage(t, c)
		if u.stored <= limit {
			t.Logf("stored %d bytes after the churn (peak %d) for %d live x %d replicas: %.2fx", u.stored, peak.stored,
				size, replicas, float64(u.stored)/float64(size*replicas))
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("stored %d bytes (peak %d), still above %d: the released blocks were not reclaimed", u.stored, peak.stored, limit)
		}
		time.Sleep(250 * time.Millisecond)
	}
	wantContent(t, p, want)
	fsckClean(t, c)
	restart(t, c)
	wantContent(t, p, want)
	fsckClean(t, c)
}
