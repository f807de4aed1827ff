package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// These tests check the harness itself against fakeup, a loopback stand-in
// for `tessera up` (./fakeup), so that it is known to work before the real
// binary exists.

var fakeBin string

func TestMain(m *testing.M) {
	os.Exit(func() int {
		dir, err := os.MkdirTemp("", "cluster-test-")
		if err != nil {
			panic(err)
		}
		defer os.RemoveAll(dir)
		root, err := RepoRoot(".")
		if err == nil && os.Geteuid() == 0 {
			fakeBin = filepath.Join(dir, "fakeup")
			if err := goBuild(root, fakeBin, "./test/cluster/fakeup"); err != nil {
				panic(err)
			}
		}
		return m.Run()
	}())
}

func goBuild(root, out, pkg string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := RunBin(ctx, "go", "-C", root, "build", "-o", out, pkg)
	if err == nil && res.ExitCode != 0 {
		err = errors.New(res.Stderr)
	}
	return err
}

func needFuse(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skip("no /dev/fuse")
	}
}

func opts(t *testing.T, bin string) Options {
	base := t.TempDir()
	return Options{Bin: bin, DataDir: filepath.Join(base, "data"), MountDir: filepath.Join(base, "mnt")}
}

func TestStartStopRestartKill(t *testing.T) {
	needFuse(t)
	c, err := Start(opts(t, fakeBin))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if !IsFuseMounted(c.Mount()) || c.MetaAddr() != "127.0.0.1:0" {
		t.Fatalf("after Start: mounted %v, meta %q", IsFuseMounted(c.Mount()), c.MetaAddr())
	}
	if err := os.WriteFile(filepath.Join(c.Mount(), "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := c.Restart(); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(c.Mount(), "f")); err != nil || string(b) != "x" {
		t.Fatalf("after restart: %q %v", b, err)
	}

	// Kill9 leaves a stale mount; Restart gets over it.
	if err := c.Kill9(); err != nil {
		t.Fatal(err)
	}
	if !IsMounted(c.Mount()) {
		t.Fatal("kill -9 left no stale mount: the crash path is not exercised")
	}
	if _, err := os.Stat(filepath.Join(c.Mount(), "f")); !errors.Is(err, syscall.ENOTCONN) {
		t.Logf("stat on the stale mount: %v", err)
	}
	if err := c.Restart(); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(c.Mount(), "f")); err != nil || string(b) != "x" {
		t.Fatalf("after kill -9 and restart: %q %v", b, err)
	}
	st, err := c.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if n, err := st.Int("files"); err != nil || n != 1 {
		t.Errorf("status files: %d %v", n, err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if IsMounted(c.Mount()) {
		t.Fatal("mounted after Close")
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestStartFailures(t *testing.T) {
	needFuse(t)
	// Exits before ready: the error carries its stderr.
	o := opts(t, fakeBin)
	o.Args = []string{"--bogus"}
	_, err := Start(o)
	if err == nil || !strings.Contains(err.Error(), "bogus") {
		t.Fatalf("Start with a bad flag: %v", err)
	}

	// Never ready: killed (group included) after the timeout.
	script := filepath.Join(t.TempDir(), "hang")
	pidFile := script + ".pid"
	if err := os.WriteFile(script, []byte("#!/bin/sh\nsleep 60 &\necho $! > "+pidFile+"\necho starting >&2\nwait\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	o = opts(t, script)
	o.ReadyTimeout = time.Second
	_, err = Start(o)
	if err == nil || !strings.Contains(err.Error(), "no \"tessera up: ready\" line") || !strings.Contains(err.Error(), "starting") {
		t.Fatalf("Start of a daemon that never gets ready: %v", err)
	}
	b, _ := os.ReadFile(pidFile)
	var pid int
	if _, err := fmt.Sscan(strings.TrimSpace(string(b)), &pid); err != nil {
		t.Fatalf("pid of the daemon's child: %q", b)
	}
	if alive(pid) {
		t.Errorf("the daemon's child %d survived", pid)
	}
}

func TestSigtermContract(t *testing.T) {
	needFuse(t)
	// A daemon that ignores SIGTERM is reported, killed, and unmounted.
	script := filepath.Join(t.TempDir(), "stubborn")
	o := opts(t, script)
	// The shell ignores SIGTERM; the daemon, its child, never sees it.
	if err := os.WriteFile(script, []byte("#!/bin/sh\ntrap '' TERM\n"+fakeBin+" \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	o.StopTimeout = 2 * time.Second
	c, err := Start(o)
	if err != nil {
		t.Fatal(err)
	}
	err = c.Close()
	if err == nil || !strings.Contains(err.Error(), "did not exit") {
		t.Errorf("Close of a daemon that ignores SIGTERM: %v", err)
	}
	if IsMounted(c.Mount()) {
		t.Error("still mounted")
	}
}

func TestParseStatus(t *testing.T) {
	s := ParseStatus("files: 3\nStored Block Bytes: 1024 (1.0 KiB)\nnoise\n")
	if n, err := s.Int("stored block bytes"); err != nil || n != 1024 {
		t.Errorf("stored block bytes: %d %v", n, err)
	}
	if _, err := s.Int("blocks"); err == nil {
		t.Error("missing key: no error")
	}
}

// alive reports whether pid runs (a zombie, dead but not reaped, does not).
func alive(pid int) bool {
	for range 50 {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return false
		}
		if _, rest, ok := strings.Cut(string(b), ") "); ok && strings.HasPrefix(rest, "Z") {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}
