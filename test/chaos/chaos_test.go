package chaos

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"tessera/internal/kv/etcdkv/etcdtest"
	"tessera/test/cluster"
)

// TestChaosShort is the CI run: one minute of faults with a fixed seed
// against a real cluster, and every invariant of the package comment.
func TestChaosShort(t *testing.T) {
	if testing.Short() {
		t.Skip("a minute of faults against a real cluster")
	}
	etcdBin := etcdtest.Binary(t)
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skip("no /dev/fuse")
	}
	root, err := cluster.RepoRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "tessera")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := cluster.Build(ctx, root, bin); err != nil {
		t.Fatal(err)
	}
	sum, err := Run(context.Background(), Config{Bin: bin, EtcdBin: etcdBin, Dir: filepath.Join(dir, "run"), Seed: 7,
		Duration: time.Minute, Log: testLog{t}})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(sum)
	if !sum.OK() {
		t.Errorf("invariants broken:\n%s", sum.Report())
	}
	// No test asserts nothing: the run did work and did inject faults.
	if sum.Ops["write"] == 0 || sum.Ops["read"] == 0 || sum.Ops["rename"] == 0 || sum.Ops["lin"] == 0 {
		t.Errorf("a workload did nothing: %v", sum.Ops)
	}
	if len(sum.Faults) == 0 {
		t.Error("no fault was injected")
	}
}

type testLog struct{ t *testing.T }

func (l testLog) Write(b []byte) (int, error) {
	l.t.Log(string(b[:len(b)-1]))
	return len(b), nil
}
