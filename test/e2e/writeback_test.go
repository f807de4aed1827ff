package e2e

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"tessera/test/cluster"
)

// filesetCmd runs `tessera fileset SUB ARGS... --data DIR`.
func filesetCmd(t *testing.T, c *cluster.Cluster, sub string, args ...string) cluster.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	all := append([]string{"fileset", sub}, args...)
	res, err := cluster.RunBin(ctx, c.Opts().Bin, append(all, "--data", c.DataDir())...)
	must(t, err)
	if res.ExitCode != 0 {
		t.Fatalf("tessera %v: exit %d\nstdout: %s\nstderr: %s", all, res.ExitCode, res.Stdout, res.Stderr)
	}
	return res
}

// treeOf lists a directory: relative path -> "d", "l:TARGET" or content.
func treeOf(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	must(t, filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case rel == ".":
		case strings.HasPrefix(fi.Name(), ".tessera-home-tmp."):
			// A file:// home's temporary file (never listed by the
			// home store), left behind by the kill -9 mid-write.
		case fi.IsDir():
			out[rel] = "d"
		case fi.Mode()&os.ModeSymlink != 0:
			tg, err := os.Readlink(p)
			out[rel] = "l:" + tg
			return err
		default:
			b, err := os.ReadFile(p)
			out[rel] = string(b)
			return err
		}
		return nil
	}))
	return out
}

func sameTree(t *testing.T, cache, home string) {
	t.Helper()
	c, h := treeOf(t, cache), treeOf(t, home)
	var diffs []string
	for p, v := range c {
		if hv, ok := h[p]; !ok {
			diffs = append(diffs, "missing at home: "+p)
		} else if hv != v {
			diffs = append(diffs, fmt.Sprintf("differs: %s (%d bytes in the cache, %d at home)", p, len(v), len(hv)))
		}
	}
	for p := range h {
		if _, ok := c[p]; !ok {
			diffs = append(diffs, "only at home: "+p)
		}
	}
	sort.Strings(diffs)
	if len(diffs) > 0 {
		t.Fatalf("home != cache (%d entries in the cache, %d at home):\n%s", len(c), len(h), strings.Join(diffs[:min(len(diffs), 20)], "\n"))
	}
}

// TestWritebackSurvivesKill9: an sw fileset over a file:// home, two
// gateways in `tessera up`. Creates, writes (inline and block-sized),
// renames, removes through the mount, queued behind an hour's sync lag;
// `tessera fileset flush` starts the drain and the process (meta,
// gateways, mount) is killed with SIGKILL once home has its first
// entries; started again, `tessera fileset flush` returns once the queue
// is drained (the dead gateways' claims come back after their lease):
// home then equals the cache byte for byte.
func TestWritebackSurvivesKill9(t *testing.T) {
	c := startCluster(t, func(o *cluster.Options) { o.Args = append(o.Args, "--gateways", "2") })
	home := t.TempDir()
	fsDir := filepath.Join(c.Mount(), "wb")
	filesetCmd(t, c, "create", fsDir, "--home", "file://"+home, "--mode", "sw", "--sync-lag", "1h")

	rng := rand.New(rand.NewPCG(14, 6))
	dirs := []string{fsDir}
	for i := range 400 {
		d := dirs[rng.IntN(len(dirs))]
		switch r := rng.IntN(10); {
		case r < 2:
			p := filepath.Join(d, fmt.Sprintf("d%d", i))
			if err := os.Mkdir(p, 0o755); err == nil {
				dirs = append(dirs, p)
			} else if !os.IsNotExist(err) { // d was moved away
				t.Fatal(err)
			}
		case r < 7:
			n := rng.IntN(4 * kib)
			if rng.IntN(8) == 0 {
				n = 200*kib + rng.IntN(2*mib) // past inline, through the block servers
			}
			if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("f%d", i)), randBytes(uint64(i), n), 0o644); err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
		case r < 8:
			ents, _ := os.ReadDir(d)
			if len(ents) > 0 {
				e := ents[rng.IntN(len(ents))]
				to := filepath.Join(dirs[rng.IntN(len(dirs))], fmt.Sprintf("r%d", i))
				if err := os.Rename(filepath.Join(d, e.Name()), to); err == nil && e.IsDir() {
					dirs = append(dirs, to) // (its old path stays listed: uses of it meet ENOENT)
				}
			}
		default:
			ents, _ := os.ReadDir(d)
			for _, e := range ents {
				if !e.IsDir() {
					must(t, os.Remove(filepath.Join(d, e.Name())))
					break
				}
			}
		}
	}
	// A deep chain made and its lower half removed.
	deep := fsDir
	for i := range 40 {
		deep = filepath.Join(deep, fmt.Sprintf("deep%d", i))
		must(t, os.Mkdir(deep, 0o755))
		must(t, os.WriteFile(filepath.Join(deep, "x"), []byte(deep), 0o644))
	}
	must(t, os.RemoveAll(filepath.Join(fsDir, "deep0/deep1/deep2/deep3/deep4/deep5/deep6/deep7/deep8/deep9/deep10/deep11/deep12/deep13/deep14/deep15/deep16/deep17/deep18/deep19")))
	before := treeOf(t, fsDir)

	// The sync lag is an hour: nothing has gone home yet, all is queued.
	if got := treeOf(t, home); len(got) != 0 {
		t.Fatalf("home has %d entries before the lag", len(got))
	}
	// Flush in the background, and kill -9 the process (meta, both
	// gateways, mount) as soon as the drain has begun at home.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bg := make(chan struct{})
	go func() {
		defer close(bg)
		cluster.RunBin(ctx, c.Opts().Bin, "fileset", "flush", fsDir, "--data", c.DataDir())
	}()
	homeTop := func() int { ents, _ := os.ReadDir(home); return len(ents) }
	for i := 0; i < 3000 && homeTop() == 0; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("home has %d entries at its top of %d in the whole cache when the process is killed", homeTop(), len(before))
	must(t, c.Kill9())
	<-bg
	if err := c.Restart(); err != nil {
		t.Fatalf("restart: %v", err)
	}
	after := treeOf(t, fsDir)
	if len(after) != len(before) {
		t.Fatalf("the cache has %d entries after kill -9, %d before", len(after), len(before))
	}
	// flush makes everything queued due at once, whatever the lag, and
	// waits while the new process's gateways apply it (the killed ones'
	// claims come back after their lease).
	res := filesetCmd(t, c, "flush", fsDir)
	if !strings.Contains(res.Stdout, "drained") {
		t.Fatalf("flush said: %s %s", res.Stdout, res.Stderr)
	}
	sameTree(t, fsDir, home)
	if bytes.Contains([]byte(res.Stderr), []byte("failed for good")) {
		t.Fatalf("flush reported failures: %s", res.Stderr)
	}
}
