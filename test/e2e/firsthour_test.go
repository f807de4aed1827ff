package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tessera/test/cluster"
)

// Issue 23, "in the first hour": what a newcomer following the README
// meets on `tessera up` as it starts by default.

// TestFilesetOnUpDefaultsWithMetrics: `tessera up --metrics ADDR` and no
// --gateways (the way to get the status page, on up's defaults): fileset
// create works (the metrics decorator passes the fileset calls on) and
// the fileset serves home's files (up runs one gateway by default).
func TestFilesetOnUpDefaultsWithMetrics(t *testing.T) {
	c := startCluster(t, withBlockServers(1), func(o *cluster.Options) { o.Args = append(o.Args, "--metrics", "127.0.0.1:0") })
	home := filepath.Join(t.TempDir(), "home")
	must(t, os.MkdirAll(filepath.Join(home, "sub"), 0o755))
	data := randBytes(23, 300001)
	writeFile(t, filepath.Join(home, "sub", "b.bin"), data)
	cache := filepath.Join(c.Mount(), "fs")
	res := runBin(t, "fileset", "create", cache, "--home", "file://"+home, "--mode", "ro")
	if res.ExitCode != 0 {
		t.Fatalf("fileset create with --metrics: exit %d: %s", res.ExitCode, res.Stderr)
	}
	if l := runBin(t, "fileset", "list", "--data", c.DataDir()); l.ExitCode != 0 || !strings.Contains(l.Stdout, "file://"+home) {
		t.Errorf("fileset list with --metrics: exit %d, %q %q", l.ExitCode, l.Stdout, l.Stderr)
	}
	wantContent(t, filepath.Join(cache, "sub", "b.bin"), data)
}

// TestFilesetCreateFailureLeavesNothing: a fileset create that fails after
// it made its directory (here: --data names no cluster) removes it again;
// a directory that was there before stays.
func TestFilesetCreateFailureLeavesNothing(t *testing.T) {
	c := startCluster(t, withBlockServers(1))
	home := t.TempDir()
	notCluster := t.TempDir()
	made := filepath.Join(c.Mount(), "made")
	res := runBin(t, "fileset", "create", made, "--home", "file://"+home, "--data", notCluster)
	if res.ExitCode == 0 {
		t.Fatalf("fileset create with --data of no cluster succeeded: %s", res.Stdout)
	}
	if _, err := os.Lstat(made); !os.IsNotExist(err) {
		t.Errorf("after a failed fileset create, %s: %v; want it gone (stderr %q)", made, err, res.Stderr)
	}
	there := filepath.Join(c.Mount(), "there")
	must(t, os.Mkdir(there, 0o755))
	if res := runBin(t, "fileset", "create", there, "--home", "file://"+home, "--data", notCluster); res.ExitCode == 0 {
		t.Fatalf("fileset create with --data of no cluster succeeded: %s", res.Stdout)
	}
	if _, err := os.Stat(there); err != nil {
		t.Errorf("a failed fileset create removed the directory that was there before: %v", err)
	}
}
