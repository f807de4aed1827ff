package e2e

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestQuotaOnAMount does what acceptance bar 18-quota does: `tessera quota
// set DIR --bytes 10M` with a path on the mount alone makes a 20 MB write
// in DIR fail with EDQUOT, the tree stays at or under the quota plus one
// block in flight, and statfs in DIR (df) reports the quota while the
// mount's root does not; get and list show it; after remove the write
// goes through.
func TestQuotaOnAMount(t *testing.T) {
	c := startCluster(t)
	dir := filepath.Join(c.Mount(), "q")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if res := runBin(t, "quota", "set", dir, "--bytes", "10M"); res.ExitCode != 0 {
		t.Fatalf("quota set: exit %d: %s", res.ExitCode, res.Stderr)
	}
	err := writeZeros(filepath.Join(dir, "f"), 20<<20)
	if !errors.Is(err, syscall.EDQUOT) {
		t.Fatalf("20 MB under a 10 MB quota: %v; want EDQUOT", err)
	}
	// The kernel may show the refused file's size as written until its
	// cached attributes expire (the entry and attribute timeout, 1 s);
	// the size the mount answers after that is what was committed.
	used := treeBytes(t, dir)
	for end := time.Now().Add(30 * time.Second); used > 14<<20 && time.Now().Before(end); used = treeBytes(t, dir) {
		time.Sleep(200 * time.Millisecond)
	}
	if used > 14<<20 {
		t.Errorf("the tree holds %d bytes under a 10 MB quota", used)
	}
	var in, root syscall.Statfs_t
	if err := syscall.Statfs(dir, &in); err != nil {
		t.Fatal(err)
	}
	if size := in.Blocks * uint64(in.Frsize); size != 10<<20 {
		t.Errorf("df in the quota tree: %d bytes, want 10 MiB", size)
	}
	if in.Bavail > in.Blocks {
		t.Errorf("df in the quota tree: %d blocks available of %d", in.Bavail, in.Blocks)
	}
	if err := syscall.Statfs(c.Mount(), &root); err != nil {
		t.Fatal(err)
	}
	if root.Blocks == in.Blocks {
		t.Errorf("df at the mount's root shows the quota too (%d blocks)", root.Blocks)
	}
	if res := runBin(t, "quota", "get", dir); res.ExitCode != 0 || !strings.Contains(res.Stdout, "10485760") {
		t.Errorf("quota get: exit %d\n%s%s", res.ExitCode, res.Stdout, res.Stderr)
	}
	if res := runBin(t, "quota", "list", "--data", c.DataDir()); res.ExitCode != 0 || !strings.Contains(res.Stdout, "10485760") {
		t.Errorf("quota list: exit %d\n%s%s", res.ExitCode, res.Stdout, res.Stderr)
	}
	if res := runBin(t, "quota", "remove", dir); res.ExitCode != 0 {
		t.Fatalf("quota remove: exit %d: %s", res.ExitCode, res.Stderr)
	}
	if err := writeZeros(filepath.Join(dir, "g"), 20<<20); err != nil {
		t.Errorf("20 MB after the quota's removal: %v", err)
	}
}

// writeZeros writes n zero bytes to a new file in 1 MiB writes, fsyncs and
// closes it, and returns the first error.
func writeZeros(path string, n int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	buf := make([]byte, 1<<20)
	for ; n > 0 && err == nil; n -= len(buf) {
		_, err = f.Write(buf[:min(n, len(buf))])
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// treeBytes sums the sizes of the regular files under dir.
func treeBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var sum int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		info, err := d.Info()
		if err == nil {
			sum += info.Size()
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return sum
}
