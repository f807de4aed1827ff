package e2e

import (
	"syscall"
	"testing"

	"tessera/test/cluster"
)

// TestDfReportsTheDataDisk: df on a mount tells the room the block servers
// have, not a nominal petabyte: the data directory's file system (counted
// once, though `tessera up`'s three servers share it) divided by the
// replicas.
func TestDfReportsTheDataDisk(t *testing.T) {
	for _, replicas := range []string{"1", "2"} {
		t.Run("replicas="+replicas, func(t *testing.T) {
			c := startCluster(t, func(o *cluster.Options) { o.Args = append(o.Args, "--replicas", replicas) })
			reps := statusInt(t, c, "replicas")
			if want := int64(replicas[0] - '0'); reps != want {
				t.Fatalf("status says %d replicas, want %d", reps, want)
			}
			checkDf(t, c.Mount(), c.DataDir(), reps)
		})
	}
}

// TestDfOverSeparateBlockServers: the same through block servers in their
// own processes, which a mount asks over TLS with its client certificate
// (GET /v1/space); the two servers' directories share one file system,
// counted once.
func TestDfOverSeparateBlockServers(t *testing.T) {
	m := startMultiOpts(t, cluster.MultiOptions{BlockServers: 2, MetaArgs: []string{"--replicas", "2"}})
	w := addMount(t, m)
	checkDf(t, w.Mount(), t.TempDir(), 2)
}

// checkDf compares statfs of the mount with that of dir's file system over
// reps replicas. The free figure moves with whatever else writes to that
// disk, so it is compared with the disk's own before and after, give or
// take 1% of its size; the size must match to a block.
func checkDf(t *testing.T, mount, dir string, reps int64) {
	t.Helper()
	var before, mnt, after syscall.Statfs_t
	for _, c := range []struct {
		path string
		st   *syscall.Statfs_t
	}{{dir, &before}, {mount, &mnt}, {dir, &after}} {
		if err := syscall.Statfs(c.path, c.st); err != nil {
			t.Fatal(err)
		}
	}
	diskSize := int64(before.Blocks) * before.Bsize
	size := int64(mnt.Blocks) * int64(mnt.Frsize)
	if want := diskSize / reps; size > want || size <= want-int64(mnt.Frsize) {
		t.Errorf("df size %d, want the data disk's %d / %d replicas = %d", size, diskSize, reps, want)
	}
	free := int64(mnt.Bavail) * int64(mnt.Frsize)
	lo := min(int64(before.Bavail)*before.Bsize, int64(after.Bavail)*after.Bsize)
	hi := max(int64(before.Bavail)*before.Bsize, int64(after.Bavail)*after.Bsize)
	slack := diskSize / 100
	if free < (lo-slack)/reps || free > (hi+slack)/reps {
		t.Errorf("df free %d, want the data disk's (%d..%d ± %d) / %d replicas", free, lo, hi, slack, reps)
	}
	if mnt.Bfree < mnt.Bavail || mnt.Blocks < mnt.Bfree {
		t.Errorf("statfs of the mount: blocks %d, free %d, available %d", mnt.Blocks, mnt.Bfree, mnt.Bavail)
	}
}
