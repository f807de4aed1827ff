package e2e

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"tessera/test/cluster"
)

// TestMultiSite runs issue 13's three-site checks on one harness (three
// etcd members, metas, block servers and mounts, WAN links of 60, 60 and
// 120 ms): what a write at site A shows at site C under each policy, a
// lease callback from meta A to a mount of meta C, porcupine on a mixed
// history, then the failures (a partitioned site, a killed meta), last
// because they disturb the cluster.
func TestMultiSite(t *testing.T) {
	s := startSites(t)

	// session (close-to-open): after A's close, an open at C sees it.
	t.Run("SessionCloseToOpen", func(t *testing.T) {
		at := siteDir(t, s, "session", "session")
		for round := range uint64(3) {
			v := stamped(100+round, 20_000)
			must(t, os.WriteFile(filepath.Join(at[siteA], "f"), v, 0o644))
			got, err := os.ReadFile(filepath.Join(at[siteC], "f"))
			must(t, err)
			if !bytes.Equal(got, v) {
				t.Fatalf("round %d: an open at C after A's close read %s, want %s",
					round, describeStamped(got), describeStamped(v))
			}
		}
	})

	// posix: a read at C after A's write returned sees it, through a
	// handle C keeps open and reads before every write (so it caches the
	// file under a lease of meta C that meta A's commit must call back).
	t.Run("PosixCallbackAcrossMetas", func(t *testing.T) {
		at := siteDir(t, s, "posix", "posix")
		writeFileSync(t, filepath.Join(at[siteA], "f"), stamped(1, 20_000))
		w, err := os.OpenFile(filepath.Join(at[siteA], "f"), os.O_RDWR, 0)
		must(t, err)
		defer w.Close()
		r, err := os.Open(filepath.Join(at[siteC], "f"))
		must(t, err)
		defer r.Close()
		buf := make([]byte, 20_008)
		for round := range uint64(5) {
			n, err := preadFull(r, buf, 0)
			must(t, err)
			if id, _ := stampOf(buf[:n]); id != round+1 && round > 0 {
				t.Fatalf("round %d: C read %s before the write, want the previous write %d", round, describeStamped(buf[:n]), round+1)
			}
			v := stamped(round+2, 20_000)
			if _, err := w.WriteAt(v, 0); err != nil {
				t.Fatalf("round %d: pwrite at A: %v", round, err)
			}
			n, err = preadFull(r, buf, 0)
			must(t, err)
			if !bytes.Equal(buf[:n], v) {
				t.Fatalf("round %d: a read at C after A's pwrite returned read %s, want %s",
					round, describeStamped(buf[:n]), describeStamped(v))
			}
		}
	})

	// O_RSYNC: under session, a handle at C opened O_SYNC|O_RSYNC reads
	// every write A acknowledged (O_SYNC), as posix does for that open.
	t.Run("RSync", func(t *testing.T) {
		at := siteDir(t, s, "rsync", "session")
		writeFileSync(t, filepath.Join(at[siteA], "f"), stamped(1, 20_000))
		w, err := os.OpenFile(filepath.Join(at[siteA], "f"), os.O_RDWR|unix.O_SYNC, 0)
		must(t, err)
		defer w.Close()
		r, err := os.OpenFile(filepath.Join(at[siteC], "f"), os.O_RDONLY|unix.O_SYNC|unix.O_RSYNC, 0)
		must(t, err)
		defer r.Close()
		buf := make([]byte, 20_008)
		for round := range uint64(4) {
			v := stamped(round+2, 20_000)
			if _, err := w.WriteAt(v, 0); err != nil {
				t.Fatalf("round %d: O_SYNC pwrite at A: %v", round, err)
			}
			n, err := preadFull(r, buf, 0)
			must(t, err)
			if !bytes.Equal(buf[:n], v) {
				t.Fatalf("round %d: an O_RSYNC read at C after A's O_SYNC write read %s, want %s",
					round, describeStamped(buf[:n]), describeStamped(v))
			}
		}
	})

	// porcupine: a mixed history of writers and readers at all three
	// sites on a few files is linearizable per file under posix, and
	// under session through O_SYNC|O_RSYNC handles.
	t.Run("LinearizablePosix", func(t *testing.T) {
		checkLinearizable(t, sitesLin(t, s, "linposix", "posix"), 0)
	})
	t.Run("LinearizableRSync", func(t *testing.T) {
		checkLinearizable(t, sitesLin(t, s, "linrsync", "session"), unix.O_SYNC|unix.O_RSYNC)
	})

	// Nearby reads: once site C holds its copy, a fresh mount at C reads a
	// replicated file without fetching blocks across the WAN.
	t.Run("NearbyRead", func(t *testing.T) { testNearbyRead(t, s) })

	// Failures last: they disturb the cluster.
	t.Run("Partition", func(t *testing.T) { testPartition(t, s) })
	t.Run("KillMeta", func(t *testing.T) { testKillMeta(t, s) })
}

// sitesLin makes directory name (one copy per site, policy) and returns a
// ccluster of one mount per site for checkLinearizable.
func sitesLin(t *testing.T, s *cluster.Sites, name, policy string) *ccluster {
	siteDir(t, s, name, policy)
	c := &ccluster{dir: name}
	for i := range s.Names() {
		c.mounts = append(c.mounts, s.Mount(i))
	}
	return c
}
