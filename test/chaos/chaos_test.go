package chaos

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"tessera/test/chaos/chaostest"
)

// TestChaosShort is the CI run: one minute of faults with a fixed seed
// against a real cluster, and every invariant of the package comment.
func TestChaosShort(t *testing.T) {
	dir, bin, etcdBin := chaostest.Binaries(t, "a minute of faults against a real cluster")
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
