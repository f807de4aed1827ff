package e2e

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"tessera/test/cluster"
)

// TestClusterHarness checks cluster.Multi and the process contract it
// relies on, with no flag beyond the core ones: meta, 3 block servers and a
// mount come up as separate processes; a block server killed with -9 comes
// back on its address; a mount killed with -9 leaves a stale mount that
// the next `tessera mount` cleans up; block files are where the contract
// puts them; SIGTERM ends every process with status 0 (checked by the
// cleanup).
func TestClusterHarness(t *testing.T) {
	m := startMulti(t, 3)
	mnt := addMount(t, m)
	data := randBytes(9, 3*mib+5)
	writeFile(t, filepath.Join(mnt.Mount(), "f"), data)
	f, err := os.Open(filepath.Join(mnt.Mount(), "f"))
	must(t, err)
	must(t, f.Sync())
	f.Close()

	total := 0
	for _, d := range m.Servers() {
		fs, err := d.BlockFiles()
		must(t, err)
		for h, p := range fs {
			if want := filepath.Join(d.DataDir(), "blocks", h[:2], h[2:4], h); p != want {
				t.Errorf("block file %s, want it at %s", p, want)
			}
		}
		total += len(fs)
	}
	if total == 0 {
		t.Errorf("no block file under any server's DIR/blocks/ab/cd/ after a 3 MiB write and fsync")
	}

	b1 := m.Servers()[1]
	addr := b1.Addr()
	must(t, b1.Kill9())
	if b1.Running() {
		t.Fatal("b1 runs after Kill9")
	}
	must(t, b1.Restart())
	if b1.Addr() != addr {
		t.Errorf("b1 came back on %s, want its old address %s", b1.Addr(), addr)
	}

	must(t, mnt.Kill9())
	if !cluster.IsMounted(mnt.Mount()) {
		t.Fatal("kill -9 of a mount left no stale mount: the crash path is not exercised")
	}
	must(t, mnt.Restart())
	wantContent(t, filepath.Join(mnt.Mount(), "f"), data)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := m.Run(ctx, "status")
	must(t, err)
	if res.ExitCode != 0 {
		t.Fatalf("tessera status --meta: exit %d: %s", res.ExitCode, res.Stderr)
	}
	t.Logf("tessera status:\n%s", res.Stdout)
	if _, err := cluster.ParseClusterStatus(res.Stdout); err != nil {
		t.Logf("not yet the cluster status of issue 3: %v", err)
	}
}
