package main

import (
	"bufio"
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// directive is the start of the //go:generate lines that run wrapgen.
const directive = "//go:generate go run tessera/internal/meta/wrapgen "

// run is one //go:generate line: the directory it runs in and its flags.
type run struct {
	dir  string
	args []string
}

// findRuns returns every //go:generate line of the module under root that
// runs wrapgen.
func findRuns(t *testing.T, root string) []run {
	t.Helper()
	var runs []run
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); n == "testdata" || n == "vendor" || strings.HasPrefix(n, ".") && p != root {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if line := sc.Text(); strings.HasPrefix(line, directive) {
				runs = append(runs, run{filepath.Dir(p), strings.Fields(strings.TrimPrefix(line, directive))})
			}
		}
		return sc.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	return runs
}

// TestGeneratedFilesAreCurrent runs every wrapgen line of the module again
// and fails when a generated file differs from what it would write now
// (an interface of package meta changed, or a method was written by hand,
// and `go generate ./...` was not run).
func TestGeneratedFilesAreCurrent(t *testing.T) {
	runs := findRuns(t, "../../..")
	if len(runs) < 3 {
		t.Fatalf("found %d //go:generate lines running wrapgen, want the decorators' (at least 3): is the scan broken?", len(runs))
	}
	for _, r := range runs {
		cfg, err := parseArgs(r.args)
		if err != nil {
			t.Errorf("%s: %v", r.dir, err)
			continue
		}
		want, err := generate(r.dir, cfg)
		if err != nil {
			t.Errorf("%s: %v", r.dir, err)
			continue
		}
		path := filepath.Join(r.dir, cfg.out)
		got, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("%v (run go generate ./...)", err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale: run go generate ./... (first difference at byte %d)", path, firstDiff(got, want))
		}
	}
}

// firstDiff is the offset of the first byte where a and b differ.
func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestGenerateLeavesHandWrittenOut: a method the decorator's package
// defines on the type by hand is not generated, and every other method of
// the interfaces asked for is, each one call of the hook.
func TestGenerateLeavesHandWrittenOut(t *testing.T) {
	root, _, err := moduleRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	// A scratch package inside the module, so moduleRoot finds go.mod.
	dir := filepath.Join(root, "internal", "meta", "wrapgen", "testdata", "scratch")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(filepath.Join(root, "internal", "meta", "wrapgen", "testdata")) })
	src := `package scratch

import (
	"context"

	"tessera/internal/meta"
)

type deco struct{ api meta.API }

func (d *deco) around(ctx context.Context, op string, call func(context.Context, meta.API) error) error {
	return call(ctx, d.api)
}

func (d *deco) Sync(ctx context.Context) error { return nil }
`
	if err := os.WriteFile(filepath.Join(dir, "deco.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := parseArgs([]string{"-type", "*deco", "-recv", "d", "-ifaces", "FS,QuotaAPI", "-lower", "FS", "-o", "zz_deco_gen.go"})
	if err != nil {
		t.Fatal(err)
	}
	out, err := generate(dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Join(strings.Fields(strings.ReplaceAll(string(out), "//", "")), " ")
	for _, want := range []string{
		`func (d *deco) GetAttr(ctx context.Context, ino meta.Ino) (r0 meta.Inode, err error) {`,
		`d.around(ctx, "getattr",`,
		`d.around(ctx, "quota_of",`,
		`meta.Forward{Next: next}.QuotaOf(ctx, ino)`,
		`Written by hand, so left out here: Sync.`,
		`_ meta.FS = (*deco)(nil)`,
	} {
		if !strings.Contains(s, want) {
			t.Errorf("generated code lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(s, "func (d *deco) Sync(") {
		t.Errorf("generated code redefines the hand-written Sync")
	}
}

// TestBadArgs: a run without its required flags, or with an interface
// meta does not have, is refused with an error naming what is wrong.
func TestBadArgs(t *testing.T) {
	if _, err := parseArgs([]string{"-type", "T"}); err == nil || !strings.Contains(err.Error(), "required") {
		t.Errorf("missing flags: %v", err)
	}
	if _, err := parseArgs([]string{"-type", "T", "-recv", "t", "-ifaces", "FS", "-o", "../x.go"}); err == nil || !strings.Contains(err.Error(), "-o") {
		t.Errorf("output outside the directory: %v", err)
	}
	cfg, err := parseArgs([]string{"-type", "Forward", "-recv", "f", "-ifaces", "NoSuchAPI", "-style", "forward", "-o", "zz_x_gen.go"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := generate("..", cfg); err == nil || !strings.Contains(err.Error(), "NoSuchAPI") {
		t.Errorf("unknown interface: %v", err)
	}
}
