package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
)

// version is the release, set when building one:
//
//	go build -ldflags "-X main.version=v1.2.0" ./cmd/tessera
//
// Without it the module version of the build information is shown,
// "devel" for a build from a checkout.
var version string

// commit is the commit built, set by make build and scripts/up.sh
// (-X main.commit=...) for the builds whose build information has none (go
// does not record it from a git worktree).
var commit string

// runVersion is `tessera version`: the release, the Go toolchain and the
// commit the binary was built from when the build recorded it.
func runVersion(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: version takes no argument, got %q", errUsage, fs.Arg(0))
	}
	bi, _ := debug.ReadBuildInfo()
	writeVersion(os.Stdout, version, commit, bi)
	return nil
}

// writeVersion prints the version lines for the ldflags version v and
// commit c, and the build information bi (nil when the binary has none).
func writeVersion(w io.Writer, v, c string, bi *debug.BuildInfo) {
	if v == "" && bi != nil && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		v = bi.Main.Version
	}
	if v == "" {
		v = "devel"
	}
	goVersion := runtime.Version()
	settings := map[string]string{}
	if bi != nil {
		goVersion = bi.GoVersion
		for _, s := range bi.Settings {
			settings[s.Key] = s.Value
		}
	}
	fmt.Fprintf(w, "tessera %s\n", v)
	fmt.Fprintf(w, "go: %s %s/%s\n", goVersion, runtime.GOOS, runtime.GOARCH)
	rev := settings["vcs.revision"]
	if rev == "" {
		rev = c
	}
	if rev == "" {
		fmt.Fprintln(w, "commit: unknown (built without version control information)")
		return
	}
	var notes []string
	if t := settings["vcs.time"]; t != "" {
		notes = append(notes, t)
	}
	if settings["vcs.modified"] == "true" {
		notes = append(notes, "with uncommitted changes")
	}
	if len(notes) > 0 {
		rev += " (" + strings.Join(notes, ", ") + ")"
	}
	fmt.Fprintf(w, "commit: %s\n", rev)
}
