package e2e

import (
	"bytes"
	"os"
	"testing"
	"time"
)

// sessionTTL is the meta service's default session TTL
// (meta.DefaultSessionTTL): a client not heard from for that long loses its
// session and its leases.
const sessionTTL = 5 * time.Second

// TestConsistencyLeaseHolderKilled: under posix a write waits until every
// other mount caching the file has dropped it. A mount killed while it
// holds a lease on the file never answers, so the write waits for the
// lease to expire, then proceeds; the next write, with no holder left, does
// not wait. (The unit test of the same rule with an injected clock is
// metatest's SessionSyncHolderExpires.)
func TestConsistencyLeaseHolderKilled(t *testing.T) {
	c := startConsistency(t, 2, "posix")
	v1 := stamped(1, 10_000)
	writeFileSync(t, c.path(0, "f"), v1)

	// Mount 1 reads the file (and holds a lease on it), then dies.
	got, err := os.ReadFile(c.path(1, "f"))
	must(t, err)
	if !bytes.Equal(got, v1) {
		t.Fatalf("mount 1 read %d bytes, want the %d written", len(got), len(v1))
	}
	must(t, c.mounts[1].Kill9())

	f, err := os.OpenFile(c.path(0, "f"), os.O_WRONLY, 0)
	must(t, err)
	defer f.Close()
	write := func(id uint64) time.Duration {
		t.Helper()
		start := time.Now()
		if _, err := f.WriteAt(stamped(id, 10_000), 0); err != nil {
			t.Fatalf("write %d after mount 1 died: %v", id, err)
		}
		return time.Since(start)
	}
	first := write(2)
	t.Logf("first write after the holder died took %v (session TTL %v)", first.Round(time.Millisecond), sessionTTL)
	// The holder last polled at most TTL/3 before it died.
	if first < sessionTTL/2 || first > sessionTTL+3*time.Second {
		t.Fatalf("the first write took %v; want it to wait for the dead holder's lease to expire (%v after its last poll), and no longer", first, sessionTTL)
	}
	if second := write(3); second > sessionTTL/2 {
		t.Fatalf("the second write took %v; with no holder left it should not wait", second)
	}

	// A fresh mount sees the last write.
	m2 := addMount(t, c.m)
	got, err = os.ReadFile(m2.Mount() + "/" + c.dir + "/f")
	must(t, err)
	if want := stamped(3, 10_000); !bytes.Equal(got, want) {
		t.Fatalf("a new mount read %d bytes, not the last write", len(got))
	}
}
