// Package chaostest builds what a test of a chaos run (test/chaos) needs,
// apart from the chaos command so that it links no testing code.
package chaostest

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"tessera/internal/kv/etcdkv/etcdtest"
	"tessera/test/cluster"
)

// Binaries is what a test of a chaos run needs: a temporary directory
// holding the tessera binary built from the repository around the working
// directory, and the etcd server binary. It skips the test in -short mode
// (what, says why) and where there is no /dev/fuse.
func Binaries(t *testing.T, what string) (dir, bin, etcdBin string) {
	t.Helper()
	if testing.Short() {
		t.Skip(what)
	}
	etcdBin = etcdtest.Binary(t)
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skip("no /dev/fuse")
	}
	root, err := cluster.RepoRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	dir = t.TempDir()
	bin = filepath.Join(dir, "tessera")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := cluster.Build(ctx, root, bin); err != nil {
		t.Fatal(err)
	}
	return dir, bin, etcdBin
}
