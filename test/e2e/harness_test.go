package e2e

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"tessera/test/cluster"
)

// needBinary skips a test that cannot run here and fails one whose binary
// could not be built, with the build's own explanation.
func needBinary(t testing.TB) {
	t.Helper()
	if os.Getenv(envDir) != "" {
		t.Skipf("%s is set: this test needs the tessera binary and a mount", envDir)
	}
	if r := mountableReason(); r != "" {
		t.Skipf("cannot mount FUSE here: %s", r)
	}
	if suite.bin == "" {
		t.Fatalf("no tessera binary: %v", suite.buildErr)
	}
}

// option changes the cluster options of startCluster.
type option func(*cluster.Options)

func withBlockServers(n int) option { return func(o *cluster.Options) { o.BlockServers = n } }

// startCluster runs `tessera up` on fresh directories of t.TempDir() and
// registers a cleanup that stops it and checks the stop contract; nothing
// stays mounted, whatever the test did.
func startCluster(t testing.TB, opts ...option) *cluster.Cluster {
	t.Helper()
	needBinary(t)
	base := t.TempDir()
	o := cluster.Options{
		Bin:      suite.bin,
		DataDir:  filepath.Join(base, "data"),
		MountDir: filepath.Join(base, "mnt"),
	}
	for _, f := range opts {
		f(&o)
	}
	c, err := cluster.Start(o)
	if err != nil {
		t.Fatal(err)
	}
	// Registered after TempDir's own cleanup, so it runs before it: the
	// mount is gone before the directories are removed.
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("tessera output (tail):\n%s", c.LogTail(16<<10))
		}
		if err := c.Close(); err != nil {
			t.Errorf("stopping tessera up: %v", err)
		}
	})
	return c
}

// restart stops and starts the cluster (same data and mount) and fails the
// test if that does not work.
func restart(t testing.TB, c *cluster.Cluster) {
	t.Helper()
	if err := c.Restart(); err != nil {
		t.Fatalf("restart: %v", err)
	}
}

// tessera runs a one-shot subcommand on c's data directory.
func tessera(t testing.TB, c *cluster.Cluster, sub string, args ...string) cluster.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := c.Run(ctx, sub, args...)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// statusInt reads one integer of `tessera status`.
func statusInt(t testing.TB, c *cluster.Cluster, key string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := c.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	n, err := st.Int(key)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// status returns the whole `tessera status`, for logs.
func status(t testing.TB, c *cluster.Cluster) cluster.Status {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := c.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"files", "logical bytes", "stored block bytes", "blocks", "servers"} {
		if _, ok := st[k]; !ok {
			t.Errorf("tessera status has no %q line", k)
		}
	}
	return st
}

// fsckClean runs `tessera fsck` and fails the test unless it is clean.
func fsckClean(t testing.TB, c *cluster.Cluster) {
	t.Helper()
	res := tessera(t, c, "fsck")
	if res.ExitCode != 0 || !regexp.MustCompile(`(?m)^fsck: clean\s*$`).MatchString(res.Stdout) {
		t.Errorf("tessera fsck: exit %d, want 0 and \"fsck: clean\":\n%s%s", res.ExitCode, res.Stdout, res.Stderr)
	}
}

// sharedMount is one `tessera up` that the file-system semantics tests share
// (each in its own directory), started on first use and stopped by TestMain.
// Its base directory is world-traversable so uid 1000 can reach the mount.
type sharedMount struct {
	c    *cluster.Cluster
	base string
}

func (s *sharedMount) get(t testing.TB) *cluster.Cluster {
	t.Helper()
	needBinary(t)
	if s.c != nil && !s.c.Running() {
		t.Logf("the shared tessera up had died (%v); output:\n%s", s.c.ExitError(), s.c.LogTail(16<<10))
		if err := s.c.Restart(); err != nil {
			t.Fatalf("restarting the shared tessera up: %v", err)
		}
	}
	if s.c != nil {
		return s.c
	}
	base, err := os.MkdirTemp("", "tessera-e2e-shared-")
	if err == nil {
		err = os.Chmod(base, 0o755)
	}
	if err != nil {
		t.Fatal(err)
	}
	c, err := cluster.Start(cluster.Options{
		Bin:      suite.bin,
		DataDir:  filepath.Join(base, "data"),
		MountDir: filepath.Join(base, "mnt"),
	})
	if err != nil {
		os.RemoveAll(base)
		t.Fatal(err)
	}
	s.c, s.base = c, base
	return c
}

func (s *sharedMount) close() error {
	if s.c == nil {
		return nil
	}
	err := s.c.Close()
	if err != nil {
		err = errors.Join(err, errors.New("output (tail):\n"+s.c.LogTail(16<<10)))
	}
	if !cluster.IsMounted(s.c.Mount()) {
		os.RemoveAll(s.base)
	}
	return err
}

// fsDir returns a fresh empty directory for a file-system semantics test:
// inside TESSERA_E2E_DIR when set, else on the shared tessera mount. It is
// removed after the test; on failure the daemon's output from the test's
// time is logged.
func fsDir(t testing.TB) string {
	t.Helper()
	parent := os.Getenv(envDir)
	var c *cluster.Cluster
	if parent == "" {
		c = suite.shared.get(t)
		parent = c.Mount()
	}
	dir, err := os.MkdirTemp(parent, sanitize(t.Name())+"-")
	if err != nil {
		t.Fatal(err)
	}
	var mark int64
	if c != nil {
		mark = c.LogMark()
	}
	t.Cleanup(func() {
		if c != nil && !c.Running() {
			t.Errorf("the shared tessera up died during this test: %v", c.ExitError())
		}
		if c != nil && t.Failed() {
			t.Logf("tessera output during the test:\n%s", c.LogSince(mark))
		}
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("removing the test directory: %v", err)
		}
	})
	return dir
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

func sanitize(s string) string {
	s = unsafeChars.ReplaceAllString(s, "_")
	if len(s) > 60 {
		s = s[len(s)-60:]
	}
	return s
}
