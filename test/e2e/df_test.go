package e2e

import (
	"syscall"
	"testing"

	"tessera/test/cluster"
)

// TestDfReportsTheDataDisk: df on a mount tells the room the block servers
// have, not a nominal petabyte: the data directory's file system (counted
// once, though `tessera up`'s three servers share it) divided by the
// replicas. The free figure moves with whatever else writes to that disk, so
// it is compared with the disk's own before and after, give or take 1% of
// its size; the size must match to a block.
func TestDfReportsTheDataDisk(t *testing.T) {
	for _, replicas := range []string{"1", "2"} {
		t.Run("replicas="+replicas, func(t *testing.T) {
			c := startCluster(t, func(o *cluster.Options) { o.Args = append(o.Args, "--replicas", replicas) })
			reps := statusInt(t, c, "replicas")
			if want := int64(replicas[0] - '0'); reps != want {
				t.Fatalf("status says %d replicas, want %d", reps, want)
			}
			var before, mnt, after syscall.Statfs_t
			if err := syscall.Statfs(c.DataDir(), &before); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Statfs(c.Mount(), &mnt); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Statfs(c.DataDir(), &after); err != nil {
				t.Fatal(err)
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
		})
	}
}
