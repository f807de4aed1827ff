package e2e

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"tessera/test/cluster"
)

// Issue 14 (filesets and the caching gateway), acceptance 09 as a test.

// runTessera runs a one-shot command of the binary, bounded.
func runBin(t testing.TB, args ...string) cluster.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := cluster.RunBin(ctx, suite.bin, args...)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestGatewayReadOnlyFileset: a read-only fileset over a file:// home,
// created with a path on the mount alone (no --data), serves home's tree
// byte for byte through `tessera up --gateways 1`; with home moved away the
// directories seen keep listing and the files read still read.
func TestGatewayReadOnlyFileset(t *testing.T) {
	c := startCluster(t, withBlockServers(1), func(o *cluster.Options) { o.Args = append(o.Args, "--gateways", "1") })
	home := filepath.Join(t.TempDir(), "home")
	must(t, os.MkdirAll(filepath.Join(home, "d", "e"), 0o755))
	for i := range 20 {
		writeFile(t, filepath.Join(home, "d", fmt.Sprintf("f%d", i)), randBytes(uint64(i), i*37001))
	}
	writeFile(t, filepath.Join(home, "d", "e", "deep"), []byte("deep file\n"))
	writeFile(t, filepath.Join(home, "big"), randBytes(99, 9<<20+4321)) // over two 4 MiB blocks
	must(t, os.Symlink("d/f3", filepath.Join(home, "link")))
	cache := filepath.Join(c.Mount(), "cache")

	bad := runBin(t, "fileset", "create", cache, "--home", "file://"+home, "--mode", "rw")
	if bad.ExitCode == 0 || !strings.Contains(bad.Stderr, `mode "rw"`) {
		t.Errorf("fileset create --mode rw: exit %d, stderr %q; want a refusal naming the mode", bad.ExitCode, bad.Stderr)
	}
	res := runBin(t, "fileset", "create", cache, "--home", "file://"+home, "--mode", "ro")
	if res.ExitCode != 0 {
		t.Fatalf("fileset create: exit %d: %s", res.ExitCode, res.Stderr)
	}
	if l := runBin(t, "fileset", "list", "--data", c.DataDir()); l.ExitCode != 0 || !strings.Contains(l.Stdout, "file://"+home) {
		t.Errorf("fileset list: exit %d, %q %q", l.ExitCode, l.Stdout, l.Stderr)
	}
	if s := runBin(t, "fileset", "status", cache); s.ExitCode != 0 || !strings.Contains(s.Stdout, "mode        ro") {
		t.Errorf("fileset status: exit %d, %q %q", s.ExitCode, s.Stdout, s.Stderr)
	}

	// The whole tree, as diff -r would see it.
	want := map[string][]byte{}
	err := filepath.WalkDir(home, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == home {
			return err
		}
		rel, _ := filepath.Rel(home, p)
		got := filepath.Join(cache, rel)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			wt, _ := os.Readlink(p)
			if gt, err := os.Readlink(got); err != nil || gt != wt {
				t.Errorf("symlink %s: %q, %v; want %q", rel, gt, err, wt)
			}
		case d.IsDir():
			wn, gn := names(t, p), names(t, got)
			if strings.Join(wn, "/") != strings.Join(gn, "/") {
				t.Errorf("directory %s lists %v, home %v", rel, gn, wn)
			}
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			want[rel] = b
			wantContent(t, got, b)
		}
		return nil
	})
	must(t, err)

	must(t, os.Rename(home, home+".away"))
	if n := names(t, filepath.Join(cache, "d")); len(n) != 21 {
		t.Errorf("with home gone, d lists %d entries (%v), want 21", len(n), n)
	}
	for rel, b := range want {
		wantContent(t, filepath.Join(cache, rel), b)
	}

	// The hit ratio of fileset status: the first reads above needed the
	// gateway (misses); with the kernel's page cache dropped, reading
	// everything again reaches the mount and is served by the cache (hits).
	syscall.Sync()
	must(t, os.WriteFile("/proc/sys/vm/drop_caches", []byte("3"), 0))
	for rel, b := range want {
		wantContent(t, filepath.Join(cache, rel), b)
	}
	ratio := regexp.MustCompile(`hit ratio\s+([0-9.]+)% \(`)
	var last string
	pollFor(t, "fileset status to count reads from the cache and from home", func() bool {
		time.Sleep(500 * time.Millisecond) // mounts report every few seconds
		last = runBin(t, "fileset", "status", cache).Stdout
		m := ratio.FindStringSubmatch(last)
		if m == nil {
			return false
		}
		r, err := strconv.ParseFloat(m[1], 64)
		return err == nil && r > 0 && r < 100
	})
	t.Logf("fileset status: %s", last)
}

// TestGatewayRevalidateCommand: with a validity lag of an hour a change at
// home is not seen through the mount; `tessera fileset revalidate` makes
// it seen at once (the new bytes, and a new name in the directory), and
// leaves what did not change alone.
func TestGatewayRevalidateCommand(t *testing.T) {
	c := startCluster(t, withBlockServers(1), func(o *cluster.Options) { o.Args = append(o.Args, "--gateways", "2") })
	home := filepath.Join(t.TempDir(), "home")
	must(t, os.MkdirAll(home, 0o755))
	writeFile(t, filepath.Join(home, "f"), []byte("version 1\n"))
	writeFile(t, filepath.Join(home, "g"), []byte("unchanged\n"))
	cache := filepath.Join(c.Mount(), "cache")
	if res := runBin(t, "fileset", "create", cache, "--home", "file://"+home, "--validity-lag", "1h"); res.ExitCode != 0 {
		t.Fatalf("fileset create: exit %d: %s", res.ExitCode, res.Stderr)
	}
	wantContent(t, filepath.Join(cache, "f"), []byte("version 1\n"))
	wantContent(t, filepath.Join(cache, "g"), []byte("unchanged\n"))

	v2 := []byte("version 2, longer than the first\n")
	writeFile(t, filepath.Join(home, "f"), v2)
	writeFile(t, filepath.Join(home, "h"), []byte("new at home\n"))
	later := time.Now().Add(time.Hour) // mtimes move even on a coarse clock
	for _, n := range []string{"f", "h", "."} {
		must(t, os.Chtimes(filepath.Join(home, n), later, later))
	}
	wantContent(t, filepath.Join(cache, "f"), []byte("version 1\n"))

	res := runBin(t, "fileset", "revalidate", cache)
	if res.ExitCode != 0 || !strings.Contains(res.Stdout, "2 changed") {
		t.Fatalf("fileset revalidate: exit %d, %q %q; want the root and f changed", res.ExitCode, res.Stdout, res.Stderr)
	}
	wantContent(t, filepath.Join(cache, "f"), v2)
	wantContent(t, filepath.Join(cache, "g"), []byte("unchanged\n"))
	if n := names(t, cache); strings.Join(n, " ") != "f g h" {
		t.Errorf("after revalidation the fileset lists %v, want f g h", n)
	}
}
