// Package e2e tests the tessera binary end to end: real processes, a real
// FUSE mount, checks through the mount (DESIGN.md §10).
//
// Run (as root, with /dev/fuse):
//
//	go test ./test/e2e                       # everything, ~minutes
//	go test ./test/e2e -short                # skips the 100,000-entry directory, fewer fsx ops
//	go test ./test/e2e -run TestFSX -fsx.seed=123 -fsx.ops=5000
//
// Environment:
//
//	TESSERA_E2E_DIR=/some/dir  run the file-system semantics tests (POSIX cases,
//	                           posixtest, fsx) in that existing directory instead of
//	                           a tessera mount; tests that need the binary are skipped.
//	                           Use it to validate the tests on a local file system.
//	TESSERA_BIN=/path/tessera  use this binary instead of building ./cmd/tessera.
//	TESSERA_E2E_RACE=1         build the binary with -race.
package e2e

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"tessera/test/cluster"
)

const (
	envDir    = "TESSERA_E2E_DIR"
	envBin    = "TESSERA_BIN"
	envRace   = "TESSERA_E2E_RACE"
	envHelper = "TESSERA_E2E_HELPER"
)

var (
	fsxOps  = flag.Int("fsx.ops", 20000, "operations of TestFSX (2000 with -short unless set)")
	fsxSeed = flag.Uint64("fsx.seed", 0, "seed of TestFSX; 0 picks one from the clock (it is logged)")
	bigDirN = flag.Int("e2e.bigdir", 100000, "entries in TestBigDirectory")
)

// suite is the state TestMain sets up for all tests. Tests run one at a time
// (no t.Parallel): they share two cores with the daemon they judge.
var suite struct {
	bin      string // the tessera binary, "" when not built
	buildErr error  // why it is not
	tmp      string // removed after the run
	shared   sharedMount
}

func TestMain(m *testing.M) {
	if h := os.Getenv(envHelper); h != "" {
		os.Exit(runHelper(h, os.Args[1:]))
	}
	flag.Parse()
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	tmp, err := os.MkdirTemp("", "tessera-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	suite.tmp = tmp
	defer os.RemoveAll(tmp)
	// The helper binary is copied here for children running as uid 1000.
	if err := os.Chmod(tmp, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}

	switch {
	case os.Getenv(envDir) != "":
		suite.buildErr = fmt.Errorf("%s is set: tests that need the tessera binary do not run", envDir)
	case mountableReason() != "":
		suite.buildErr = fmt.Errorf("cannot mount: %s", mountableReason())
	case os.Getenv(envBin) != "":
		suite.bin = os.Getenv(envBin)
	default:
		suite.bin, suite.buildErr = buildBinary(tmp)
	}

	code := m.Run()
	if err := suite.shared.close(); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: shared tessera mount: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

func buildBinary(dir string) (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	root, err := cluster.RepoRoot(wd)
	if err != nil {
		return "", err
	}
	var flags []string
	if os.Getenv(envRace) != "" {
		flags = append(flags, "-race")
	}
	bin := filepath.Join(dir, "tessera")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	start := time.Now()
	if err := cluster.Build(ctx, root, bin, flags...); err != nil {
		return "", err
	}
	fmt.Fprintf(os.Stderr, "e2e: built %s in %v\n", bin, time.Since(start).Round(time.Millisecond))
	return bin, nil
}

// mountableReason says why this process cannot mount FUSE, or "".
func mountableReason() string {
	if os.Geteuid() != 0 {
		return "not root"
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		return "/dev/fuse is missing"
	}
	return ""
}
