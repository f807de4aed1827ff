package e2e

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"tessera/internal/kv/etcdkv/etcdtest"
	"tessera/test/cluster"
)

// TestStatusReportsEtcdMaintenance (issue 29): the elected `tessera meta`
// over a real etcd compacts etcd's history on its schedule (here every
// second, keeping a second of history) and defragments members whose file
// has free pages; `tessera status` reports the revision compacted to, the
// latest round and each member's db and in-use sizes. Bounded: at most 60
// status calls, one a second.
func TestStatusReportsEtcdMaintenance(t *testing.T) {
	needBinary(t)
	etcd := etcdtest.StartTLS(t, 1)
	m := startMultiOpts(t, cluster.MultiOptions{BlockServers: 1, MetaDB: etcd.URL("/maint"),
		MetaArgs: []string{"--store-maintain-every", "1s", "--store-retain", "1s", "--store-defrag-free", "1"}})
	mnt := addMount(t, m).Mount()
	// Some history: files made and removed.
	for i := range 20 {
		p := filepath.Join(mnt, "f"+strconv.Itoa(i))
		must(t, os.WriteFile(p, []byte("x"), 0o644))
		must(t, os.Remove(p))
	}
	line := regexp.MustCompile(`store maintenance: compacted_rev=(\d+) compacted=(\S+) defragmented=(\S+)`)
	member := regexp.MustCompile(`store member \S+: addr=\S+ leader=true rev=\d+ db=(\d+) in_use=(\d+) state=healthy`)
	var out string
	for try := 0; try < 60; try++ {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		res, err := cluster.RunBin(ctx, m.Opts().Bin, slices.Concat([]string{"status", "--meta", m.MetaAddr()}, m.TLSArgs("admin"))...)
		cancel()
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("status: exit %d, %v: %s%s", res.ExitCode, err, res.Stdout, res.Stderr)
		}
		out = res.Stdout
		if g := line.FindStringSubmatch(out); g != nil && g[1] != "0" && g[3] != "-" && member.MatchString(out) {
			rev, _ := strconv.ParseInt(g[1], 10, 64)
			t.Logf("compacted to revision %d at %s, defragmented at %s", rev, g[2], g[3])
			return
		}
		time.Sleep(time.Second)
	}
	t.Fatalf("status never reported a compaction, a defragmentation and the member's db sizes:\n%s", out)
}
