package main

import (
	"bytes"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

// TestVersion: the ldflags version wins over the module's, a build from a
// checkout is "devel", and the commit is shown when the build recorded it
// or -X main.commit gave it.
func TestVersion(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.99.1", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "0123456789abcdef"}, {Key: "vcs.time", Value: "2026-11-28T10:00:00Z"}, {Key: "vcs.modified", Value: "true"},
	}}
	cases := []struct {
		v, c string
		bi   *debug.BuildInfo
		want []string
	}{
		{"v1.2.0", "", bi, []string{"tessera v1.2.0\n", "go: go1.99.1 " + runtime.GOOS + "/" + runtime.GOARCH + "\n",
			"commit: 0123456789abcdef (2026-11-28T10:00:00Z, with uncommitted changes)\n"}},
		{"", "", bi, []string{"tessera devel\n"}},
		{"", "fedcba9876543210", &debug.BuildInfo{GoVersion: "go1.99.1"}, []string{"tessera devel\n", "commit: fedcba9876543210\n"}},
		{"", "", &debug.BuildInfo{GoVersion: "go1.99.1", Main: debug.Module{Version: "v0.9.0"}}, []string{"tessera v0.9.0\n", "commit: unknown"}},
		{"", "", nil, []string{"tessera devel\n", "go: " + runtime.Version()}},
	}
	for _, c := range cases {
		var b bytes.Buffer
		writeVersion(&b, c.v, c.c, c.bi)
		for _, w := range c.want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("version %q: got\n%s\nwant it to hold %q", c.v, b.String(), w)
			}
		}
	}
}
