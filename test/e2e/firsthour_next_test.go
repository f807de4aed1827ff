package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestFirstHourErrorsSayWhatNext: the failures a newcomer meets first end
// with a line saying what to do: a mount point that does not exist, one
// where something is mounted, and a mount by a user other than root that
// fusermount3 refuses (allow_other without user_allow_other).
func TestFirstHourErrorsSayWhatNext(t *testing.T) {
	needBinary(t)
	base, err := os.MkdirTemp(suite.tmp, "next-") // 0755 parents: uid 1000 below
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(base) })
	must(t, os.Chmod(base, 0o755))
	run := func(cred *syscall.Credential, args ...string) string {
		t.Helper()
		cmd := exec.Command(suite.bin, args...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if cred != nil {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
			cmd.Dir = base
		}
		err := cmd.Run()
		if err == nil {
			t.Fatalf("tessera %s succeeded, want a failure:\n%s", strings.Join(args, " "), out.String())
		}
		return out.String()
	}
	want := func(out string, parts ...string) {
		t.Helper()
		for _, p := range parts {
			if !strings.Contains(out, p) {
				t.Errorf("output\n%s\nwant it to hold %q", out, p)
			}
		}
	}

	missing := filepath.Join(base, "no-such-dir")
	out := run(nil, "up", "--data", filepath.Join(base, "d1"), "--mount", missing)
	want(out, "mount point "+missing, "tessera up: next: make it first: mkdir -p "+missing)

	c := suite.shared.get(t)
	out = run(nil, "up", "--data", filepath.Join(base, "d2"), "--mount", c.Mount())
	want(out, "something is already mounted there", "tessera up: next: unmount it first (umount "+c.Mount())

	tls := filepath.Join(c.DataDir(), "tls")
	out = run(nil, "mount", "--meta", c.Field("meta"), "--tls-cert", filepath.Join(tls, "mount.crt"),
		"--tls-key", filepath.Join(tls, "mount.key"), "--tls-ca", filepath.Join(tls, "ca.crt"), c.Mount())
	want(out, "something is already mounted there", "tessera mount: next: unmount it first")

	if os.Geteuid() != 0 {
		return
	}
	if conf, _ := os.ReadFile("/etc/fuse.conf"); hasLine(string(conf), "user_allow_other") {
		t.Log("/etc/fuse.conf allows allow_other to users: the non-root case is not tried")
		return
	}
	user := filepath.Join(base, "user")
	must(t, os.MkdirAll(filepath.Join(user, "mnt"), 0o755))
	must(t, os.Chown(user, 1000, 1000))
	must(t, os.Chown(filepath.Join(user, "mnt"), 1000, 1000))
	out = run(&syscall.Credential{Uid: 1000, Gid: 1000}, "up", "--data", filepath.Join(user, "data"), "--mount", filepath.Join(user, "mnt"))
	want(out, "user_allow_other in /etc/fuse.conf")
}

// hasLine reports whether text has a line that is exactly s (comments aside).
func hasLine(text, s string) bool {
	for _, l := range strings.Split(text, "\n") {
		if strings.TrimSpace(l) == s {
			return true
		}
	}
	return false
}
