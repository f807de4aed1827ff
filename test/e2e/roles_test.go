package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tessera/test/cluster"
)

// Issue 11, item 7 (role parity) and the --replicas check of item 8.

// TestMetaOnUpDataDir: files written by `tessera up --data D` are there
// for `tessera meta --data D/meta` (the database itself, as the README
// shows where up keeps it) with `tessera blockd` on up's block
// directories. Before, meta created an empty database in D/meta/meta.
func TestMetaOnUpDataDir(t *testing.T) {
	c := startCluster(t, withBlockServers(2))
	want := map[string][]byte{"a": []byte("written by tessera up\n"), "d/b": bytes.Repeat([]byte("xyz"), 100000)}
	must(t, os.Mkdir(filepath.Join(c.Mount(), "d"), 0o755))
	for name, data := range want {
		must(t, os.WriteFile(filepath.Join(c.Mount(), name), data, 0o644))
	}
	if err := c.Stop(); err != nil {
		t.Fatalf("stopping tessera up: %v", err)
	}
	dir := c.DataDir()
	m, err := cluster.StartMulti(cluster.MultiOptions{
		Bin: suite.bin, Dir: dir, BlockServers: 2, // meta gets --data DIR/meta
		ServerArgs: func(i int) []string { return []string{"--data", filepath.Join(dir, "blocks", fmt.Sprintf("b%d", i))} },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Errorf("stopping the cluster: %v", err)
		}
		if t.Failed() {
			t.Logf("cluster output (tail):\n%s", m.LogTail(16<<10))
		}
	})
	if _, err := os.Stat(filepath.Join(dir, "meta", "meta")); err == nil {
		t.Fatalf("tessera meta --data %s/meta made a new database inside up's", dir)
	}
	r := addMount(t, m)
	for name, data := range want {
		got, err := os.ReadFile(filepath.Join(r.Mount(), name))
		if err != nil || !bytes.Equal(got, data) {
			t.Errorf("%s through tessera meta on up's data directory: %d bytes, %v; want %d bytes", name, len(got), err, len(data))
		}
	}
}

// TestUpSecondOnSameDataDir: a second `tessera up` on a data directory in
// use, or `tessera meta` on it, is refused with a message naming the
// process that holds it.
func TestUpSecondOnSameDataDir(t *testing.T) {
	c := startCluster(t, withBlockServers(1))
	pid := c.PID()
	mnt2 := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, args := range [][]string{
		{"up", "--data", c.DataDir(), "--mount", mnt2, "--block-servers", "1"},
		{"meta", "--data", c.DataDir(), "--listen", "127.0.0.1:0", "--insecure"},
		{"meta", "--data", filepath.Join(c.DataDir(), "meta"), "--listen", "127.0.0.1:0", "--insecure"},
	} {
		res, err := cluster.RunBin(ctx, suite.bin, args...)
		if err != nil {
			t.Fatalf("tessera %s: %v", strings.Join(args, " "), err)
		}
		if want := fmt.Sprintf("in use by process %d", pid); res.ExitCode == 0 || !strings.Contains(res.Stderr, want) {
			t.Errorf("tessera %s: exit %d, stderr %q; want a refusal saying %q", strings.Join(args, " "), res.ExitCode, res.Stderr, want)
		}
	}
	// The first one is unharmed.
	must(t, os.WriteFile(filepath.Join(c.Mount(), "still"), []byte("ok"), 0o644))
}

// TestUpRefusesReplicasAboveServers: `tessera up --replicas 3
// --block-servers 2` would leave every block under-replicated for ever; it
// is refused before anything starts.
func TestUpRefusesReplicasAboveServers(t *testing.T) {
	needBinary(t)
	base := t.TempDir()
	mnt := filepath.Join(base, "mnt")
	must(t, os.Mkdir(mnt, 0o755))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := cluster.RunBin(ctx, suite.bin, "up", "--data", filepath.Join(base, "data"), "--mount", mnt,
		"--block-servers", "2", "--replicas", "3")
	t.Cleanup(func() { cluster.ForceUnmount(mnt) })
	if err != nil {
		t.Fatalf("tessera up --replicas 3 --block-servers 2 did not exit by itself: %v", err)
	}
	if want := "--replicas 3 is more than the 2 block servers"; res.ExitCode != 2 || !strings.Contains(res.Stderr, want) {
		t.Fatalf("exit %d, stderr %q; want exit 2 saying %q", res.ExitCode, res.Stderr, want)
	}
}

// TestUpMetaDBFlag: `--meta-db bolt:FILE` keeps the namespace in that file
// (nothing in DATA/meta), across a restart; a malformed value is refused
// with what is expected.
func TestUpMetaDBFlag(t *testing.T) {
	needBinary(t)
	db := filepath.Join(t.TempDir(), "elsewhere", "meta.db")
	c := startCluster(t, withBlockServers(1), func(o *cluster.Options) { o.Args = append(o.Args, "--meta-db", "bolt:"+db) })
	must(t, os.WriteFile(filepath.Join(c.Mount(), "f"), []byte("in bolt"), 0o644))
	restart(t, c)
	got, err := os.ReadFile(filepath.Join(c.Mount(), "f"))
	if err != nil || string(got) != "in bolt" {
		t.Fatalf("after a restart on bolt:%s: %q, %v", db, got, err)
	}
	if fi, err := os.Stat(db); err != nil || fi.Size() == 0 {
		t.Fatalf("the bolt file %s: %v", db, err)
	}
	if _, err := os.Stat(filepath.Join(c.DataDir(), "meta")); err == nil {
		t.Fatalf("a database in %s/meta although --meta-db names a bolt file", c.DataDir())
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := cluster.RunBin(ctx, suite.bin, "meta", "--meta-db", "rocks:/x")
	must(t, err)
	if res.ExitCode != 2 || !strings.Contains(res.Stderr, "pebble:DIR, bolt:FILE, mem: or etcd://") {
		t.Fatalf("meta --meta-db rocks:/x: exit %d, %q; want exit 2 saying what is expected", res.ExitCode, res.Stderr)
	}
}
