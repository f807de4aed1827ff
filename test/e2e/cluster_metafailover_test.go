package e2e

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"tessera/internal/kv/etcdkv/etcdtest"
	"tessera/test/cluster"
)

// TestMetaKilledMountFailsOver (issue 13): two `tessera meta` processes
// over one real etcd (TLS), two block servers and a mount given both
// (--meta a,b). While files are written through the mount, the meta it
// uses is killed with SIGKILL: the writes go on through the other one,
// and every file whose close returned is read back whole by a fresh mount.
// An operation in flight at the kill may fail with EIO (a call whose reply
// was lost and that is not resent, as when a single meta restarts); such a
// file was never acknowledged. tessera status then shows the dead meta
// unreachable and the etcd member healthy.
func TestMetaKilledMountFailsOver(t *testing.T) {
	needBinary(t)
	etcd := etcdtest.StartTLS(t, 1)
	m := startMultiOpts(t, cluster.MultiOptions{MetaDB: etcd.URL("/failover"), MetaArgs: []string{"--cluster", "lab"}})
	second, err := m.AddMeta()
	if err != nil {
		t.Fatal(err)
	}
	both := m.MetaAddr() + "," + second.Addr()
	for range 2 {
		if _, err := m.AddServer("--meta", both); err != nil {
			t.Fatal(err)
		}
	}
	mount := addMount(t, m, "--meta", both)
	var victim, survivor *cluster.Daemon
	switch mount.Field("meta") {
	case m.MetaAddr():
		victim, survivor = m.Meta(), second
	case second.Addr():
		victim, survivor = second, m.Meta()
	default:
		t.Fatalf("the mount's ready line names meta=%q, neither of %s", mount.Field("meta"), both)
	}

	acked := map[string][]byte{}
	failed := 0
	for i := range 40 {
		if i == 10 {
			must(t, victim.Kill9())
		}
		name := fmt.Sprintf("f%02d", i)
		data := make([]byte, 100<<10+i)
		rand.Read(data)
		if err := os.WriteFile(filepath.Join(mount.Mount(), name), data, 0o644); err != nil {
			if failed++; i < 10 || failed > 1 || !errors.Is(err, syscall.EIO) {
				t.Fatalf("write %s (failure %d): %v", name, failed, err)
			}
			t.Logf("write %s: %v (in flight at the kill; not acknowledged)", name, err)
			continue
		}
		acked[name] = data
	}
	if len(acked) < 39 {
		t.Fatalf("%d of 40 files written", len(acked))
	}

	fresh := addMount(t, m, "--meta", survivor.Addr())
	for name, want := range acked {
		wantContent(t, filepath.Join(fresh.Mount(), name), want)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := cluster.RunBin(ctx, m.Opts().Bin, slices.Concat([]string{"status", "--meta", both}, m.TLSArgs("admin"))...)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("status: exit %d, %v: %s%s", res.ExitCode, err, res.Stdout, res.Stderr)
	}
	for _, want := range []string{
		"cluster: lab\n",
		"meta " + victim.Addr() + ": site=- rtt=- state=unreachable: ",
		"meta " + survivor.Addr() + ": site=- rtt=",
		"store members: 1 (1 healthy)\n",
	} {
		if !strings.Contains(res.Stdout, want) {
			t.Errorf("status lacks %q:\n%s", want, res.Stdout)
		}
	}
}
