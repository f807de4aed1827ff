package e2e

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"tessera/test/cluster"
)

// TestGatewayEvictCommand: an iw fileset over a file:// home; what was
// read shows in `fileset status` as cached bytes; `tessera fileset evict`
// turns the files back into placeholders (status: placeholders, fewer
// bytes), keeps and names the file with a queued local change (exit
// non-zero), and every file still reads as before (fetched again).
func TestGatewayEvictCommand(t *testing.T) {
	c := startCluster(t, withBlockServers(1), func(o *cluster.Options) { o.Args = append(o.Args, "--gateways", "1") })
	home := filepath.Join(t.TempDir(), "home")
	must(t, os.MkdirAll(filepath.Join(home, "d"), 0o755))
	want := map[string][]byte{
		"small":  []byte("small file\n"),
		"big":    randBytes(3, 6<<20+99), // past one 4 MiB block
		"d/deep": randBytes(4, 300<<10),
		"keep":   []byte("home's version\n"),
	}
	for rel, b := range want {
		writeFile(t, filepath.Join(home, rel), b)
	}
	cache := filepath.Join(c.Mount(), "cache")
	filesetCmd(t, c, "create", cache, "--home", "file://"+home, "--mode", "iw", "--sync-lag", "1h", "--validity-lag", "1h")
	for rel, b := range want {
		wantContent(t, filepath.Join(cache, rel), b)
	}
	// A local change, queued behind the hour's sync lag.
	want["keep"] = []byte("changed in the cache\n")
	writeFile(t, filepath.Join(cache, "keep"), want["keep"])

	cachedLine := regexp.MustCompile(`cached +(.*) in (\d+) files whole, (\d+) partly; (\d+) placeholders`)
	status := func() []string {
		t.Helper()
		st := filesetCmd(t, c, "status", cache)
		m := cachedLine.FindStringSubmatch(st.Stdout)
		if m == nil {
			t.Fatalf("fileset status shows no cached line:\n%s", st.Stdout)
		}
		return m[1:]
	}
	if got := status(); got[0] != "6.3 MiB" || got[1] != "4" || got[3] != "0" {
		t.Errorf("status before eviction: %v; want 6.3 MiB in 4 files, no placeholders", got)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := cluster.RunBin(ctx, c.Opts().Bin, "fileset", "evict", cache, "--data", c.DataDir())
	must(t, err)
	if res.ExitCode == 0 || !strings.Contains(res.Stderr, "kept: keep:") || !strings.Contains(res.Stderr, "1 files kept") {
		t.Errorf("fileset evict: exit %d\nstdout: %s\nstderr: %s\nwant a failure naming keep", res.ExitCode, res.Stdout, res.Stderr)
	}
	if got := status(); got[1] != "1" || got[3] != "3" {
		t.Errorf("status after eviction: %v; want 1 file held (keep), 3 placeholders", got)
	}
	for rel, b := range want {
		wantContent(t, filepath.Join(cache, rel), b)
	}
	if got := status(); got[1] != "4" || got[3] != "0" {
		t.Errorf("status after reading again: %v; want 4 files held", got)
	}
	// A single file, evicted on its own.
	res, err = cluster.RunBin(ctx, c.Opts().Bin, "fileset", "evict", filepath.Join(cache, "small"), "--data", c.DataDir())
	must(t, err)
	if res.ExitCode != 0 || !strings.Contains(res.Stdout, "1 files evicted") {
		t.Errorf("fileset evict of one file: exit %d, %q %q", res.ExitCode, res.Stdout, res.Stderr)
	}
	wantContent(t, filepath.Join(cache, "small"), want["small"])
}
