package e2e

import (
	"crypto/sha256"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"tessera/test/cluster"
	"tessera/test/fsx"
)

var fsxBlockSize = flag.Int64("fsx.block-size", 4*mib, "block size fsx aims its boundary writes at; when set, also the mount's --block-size")

// TestFSX runs the random-operation checker on a mount of its own (its
// garbage blocks go with it), or on TESSERA_E2E_DIR. On a mount it then
// checks that the final files survive a restart, `gc --grace 0s` and a
// second restart, and that fsck is clean. Replay a failure with the
// -fsx.seed and -fsx.ops it prints.
func TestFSX(t *testing.T) {
	var c *cluster.Cluster
	var d string
	if os.Getenv(envDir) != "" {
		d = fsDir(t)
	} else {
		var opts []option
		if flagSet("fsx.block-size") {
			opts = append(opts, func(o *cluster.Options) { o.BlockSize = *fsxBlockSize })
		}
		c = startCluster(t, opts...)
		d = filepath.Join(c.Mount(), "fsx")
		must(t, os.Mkdir(d, 0o755))
	}
	seed := *fsxSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	ops := *fsxOps
	if testing.Short() && !flagSet("fsx.ops") {
		ops = 2000
	}
	t.Logf("fsx: seed %d, %d ops (replay: -run 'TestFSX$' -fsx.seed=%d -fsx.ops=%d)", seed, ops, seed, ops)
	st, err := fsx.Run(fsx.Config{
		Dir:       d,
		Seed:      seed,
		Ops:       ops,
		BlockSize: *fsxBlockSize,
		Keep:      c != nil,
		Progress: func(done int, elapsed time.Duration) {
			t.Logf("fsx: %d ops, %v", done, elapsed.Round(time.Millisecond))
		},
		ProgressEvery: 5000,
	})
	t.Logf("fsx: %v", st)
	var f *fsx.Failure
	if errors.As(err, &f) {
		t.Fatalf("%v\nreplay: go test ./test/e2e -run 'TestFSX$' -fsx.seed=%d -fsx.ops=%d", f, f.Seed, f.ReplayOps())
	}
	if err != nil {
		t.Fatal(err)
	}
	if c == nil {
		return
	}

	check := func(when string) {
		t.Helper()
		for name, sum := range st.Final {
			b, err := os.ReadFile(filepath.Join(d, name))
			if err != nil {
				t.Errorf("%s: %s: %v", when, name, err)
			} else if sha256.Sum256(b) != sum {
				t.Errorf("%s: %s (%d bytes) differs from the model's final content", when, name, len(b))
			}
		}
		if ns := names(t, d); len(ns) != len(st.Final) {
			t.Errorf("%s: names %v, want %d", when, ns, len(st.Final))
		}
	}
	restart(t, c)
	check("after a restart")
	res := tessera(t, c, "gc", "--grace", "0s")
	if res.ExitCode != 0 {
		t.Fatalf("tessera gc --grace 0s: exit %d\n%s%s", res.ExitCode, res.Stdout, res.Stderr)
	}
	restart(t, c)
	check("after gc --grace 0s and a restart")
	fsckClean(t, c)
}

func flagSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
