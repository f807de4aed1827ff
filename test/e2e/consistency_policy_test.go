package e2e

import (
	"context"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"tessera/test/cluster"
)

// presets are the named policies of DESIGN §4.
var presets = []string{"posix", "seq-nocache", "forced", "relaxed", "session", "nfs", "immutable"}

// TestConsistencyImmutable: under immutable a file is written once. After
// it was written and closed, opening it and writing again fails with EPERM,
// from the mount that wrote it and from another one, whatever the open
// flags; truncating it fails too; its content stays, and it can still be
// read.
func TestConsistencyImmutable(t *testing.T) {
	c := startConsistency(t, 2, "immutable")
	want := stamped(7, 100<<10)
	writeFile(t, c.path(0, "f"), want) // create, write, close: the one write allowed
	wantContent(t, c.path(1, "f"), want)

	rewrite := func(path string, flags int) error {
		f, err := os.OpenFile(path, flags, 0)
		if err != nil {
			return err
		}
		if flags&os.O_APPEND != 0 {
			_, err = f.Write(stamped(8, 4096))
		} else {
			_, err = f.WriteAt(stamped(8, 4096), 0)
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	}
	flagNames := map[int]string{
		os.O_WRONLY: "O_WRONLY", os.O_RDWR: "O_RDWR",
		os.O_WRONLY | os.O_APPEND: "O_WRONLY|O_APPEND", os.O_WRONLY | os.O_TRUNC: "O_WRONLY|O_TRUNC",
	}
	for i := range c.mounts {
		p := c.path(i, "f")
		for flags, name := range flagNames {
			wantErrno(t, "mount "+itoa(int64(i))+": open "+name+" and write an immutable file", rewrite(p, flags), syscall.EPERM)
		}
		if err := os.Truncate(p, 10); err == nil {
			t.Errorf("mount %d: truncate of an immutable file succeeded", i)
		}
	}
	for i := range c.mounts {
		wantContent(t, c.path(i, "f"), want)
	}
}

// TestConsistencyPolicyXattr: the policy interface. A directory's policy
// reads back from every mount; new files and directories in it inherit it;
// a file's policy can be changed while it is open; every preset name is
// accepted and a bad one refused with EINVAL (the old value stays); `tessera
// policy get|set PATH [NAME]` reads and sets the same value and refuses a bad
// name listing the valid ones.
func TestConsistencyPolicyXattr(t *testing.T) {
	c := startConsistency(t, 2, "posix")
	wantPolicy := func(path, want string) {
		t.Helper()
		got, err := getPolicy(path)
		if err != nil || got != want {
			t.Errorf("policy of %s: %q, %v; want %q", path, got, err, want)
		}
	}
	wantPolicy(c.path(0, ""), "posix")
	wantPolicy(c.path(1, ""), "posix")

	f, err := os.Create(c.path(0, "f"))
	must(t, err)
	defer f.Close()
	must(t, os.Mkdir(c.path(1, "sub"), 0o755))
	for i := range c.mounts {
		wantPolicy(c.path(i, "f"), "posix")
		wantPolicy(c.path(i, "sub"), "posix")
	}

	setPolicy(t, c.path(1, "f"), "relaxed") // f is open on mount 0
	wantPolicy(c.path(0, "f"), "relaxed")
	wantPolicy(c.path(0, ""), "posix")
	if _, err := f.Write([]byte("still writable")); err != nil {
		t.Errorf("write through a handle opened before the policy changed: %v", err)
	}

	err = unix.Setxattr(c.path(0, "f"), policyXattr, []byte("no-such-policy"), 0)
	wantErrno(t, "setxattr of a bad policy name", err, syscall.EINVAL)
	wantPolicy(c.path(0, "f"), "relaxed")

	writeFile(t, c.path(0, "g"), nil)
	for _, name := range presets { // immutable last: it may freeze g
		setPolicy(t, c.path(0, "g"), name)
		wantPolicy(c.path(1, "g"), name)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	run := func(args ...string) cluster.Result {
		t.Helper()
		res, err := cluster.RunBin(ctx, suite.bin, args...)
		must(t, err)
		return res
	}
	p := c.path(1, "f")
	if res := run("policy", "get", p); res.ExitCode != 0 || !strings.Contains(res.Stdout, "relaxed") {
		t.Errorf("tessera policy get %s: exit %d, stdout %q, stderr %q; want exit 0 naming relaxed",
			p, res.ExitCode, res.Stdout, res.Stderr)
	}
	if res := run("policy", "set", p, "nfs"); res.ExitCode != 0 {
		t.Errorf("tessera policy set %s nfs: exit %d: %s%s", p, res.ExitCode, res.Stdout, res.Stderr)
	}
	wantPolicy(c.path(0, "f"), "nfs")
	res := run("policy", "set", p, "no-such-policy")
	out := res.Stdout + res.Stderr
	if res.ExitCode == 0 {
		t.Errorf("tessera policy set %s no-such-policy: exit 0", p)
	}
	for _, name := range presets {
		if !strings.Contains(out, name) {
			t.Errorf("tessera policy set with a bad name does not list %q among the valid ones: %q", name, out)
		}
	}
	wantPolicy(c.path(0, "f"), "nfs")
}
