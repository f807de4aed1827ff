package main

import (
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func metaFlags(t *testing.T, args ...string) metaAddrFlags {
	t.Helper()
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	f := addMetaAddrFlags(fs, "")
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestMetaAddrs: --meta takes an address, a list, or a cluster's name
// (looked up in --clusters); a source's name must agree with --meta's.
func TestMetaAddrs(t *testing.T) {
	ctx := context.Background()
	file := filepath.Join(t.TempDir(), "clusters")
	if err := os.WriteFile(file, []byte("lab 10.0.0.1:7400@a 10.0.0.2:7400\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args    []string
		source  string
		addrs   []string
		cluster string
		err     string
	}{
		{args: []string{"--meta", "h:1"}, addrs: []string{"h:1"}},
		{args: []string{"--meta", "h:1, h:2,"}, addrs: []string{"h:1", "h:2"}},
		{args: []string{"--meta", "h:1,h2"}, err: `"h2" is not host:port`},
		{args: []string{"--meta", "lab", "--clusters", file}, addrs: []string{"10.0.0.1:7400", "10.0.0.2:7400"}, cluster: "lab"},
		{args: []string{"--clusters", file}, source: "lab", addrs: []string{"10.0.0.1:7400", "10.0.0.2:7400"}, cluster: "lab"},
		{args: []string{"--meta", "h:1"}, source: "lab", addrs: []string{"h:1"}, cluster: "lab"},
		{args: []string{"--meta", "lab", "--clusters", file}, source: "other", err: "names another cluster"},
		{args: []string{"--meta", "nowhere", "--clusters", file}, err: "an address needs its :port"},
		{args: nil},
	} {
		tg, err := metaFlags(t, c.args...).resolve(ctx, c.source)
		switch {
		case c.err != "":
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%v %q: %v, want %q", c.args, c.source, err, c.err)
			}
		case err != nil || !slices.Equal(tg.addrs, c.addrs) || tg.cluster != c.cluster:
			t.Errorf("%v %q: %+v, %v; want %v of %q", c.args, c.source, tg, err, c.addrs, c.cluster)
		}
	}
}

func TestMountSource(t *testing.T) {
	if s, err := mountSource([]string{"/mnt"}); err != nil || s.dir != "/" || s.mnt != "/mnt" || s.cluster != "" {
		t.Errorf("MNT: %+v, %v", s, err)
	}
	if s, err := mountSource([]string{"lab:/a/b/", "/mnt"}); err != nil || s.dir != "/a/b" || s.cluster != "lab" || s.ready() != " cluster=lab root=/a/b" {
		t.Errorf("lab:/a/b MNT: %+v, %v", s, err)
	}
	for _, args := range [][]string{{}, {"a", "b", "c"}, {"h:1", "/mnt"}, {"/x", "/mnt"}} {
		if _, err := mountSource(args); !errors.Is(err, errUsage) {
			t.Errorf("%q: %v, want a usage error", args, err)
		}
	}
}
