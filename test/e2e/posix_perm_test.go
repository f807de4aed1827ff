package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestPermissions checks access with another caller's uid and gid, from a
// child process running as uid 1000, gid 1000.
func TestPermissions(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a child as uid 1000")
	}
	d := fsDir(t)
	must(t, os.Chmod(d, 0o755))
	user := &syscall.Credential{Uid: 1000, Gid: 1000}
	as := func(args ...string) syscall.Errno {
		t.Helper()
		return helper(t, user, args...).Errno
	}

	if e := as("stat", d); e != 0 {
		if os.Getenv(envDir) != "" {
			t.Skipf("uid 1000 cannot reach %s (%v): make its parents world-searchable", d, e)
		}
		t.Fatalf("uid 1000 cannot stat a 0755 directory on the mount: %v (is the mount missing allow_other?)", e)
	}

	secret := filepath.Join(d, "secret")
	public := filepath.Join(d, "public")
	group := filepath.Join(d, "group")
	writeFile(t, secret, []byte("secret"))
	writeFile(t, public, []byte("public"))
	writeFile(t, group, []byte("group"))
	must(t, os.Chmod(secret, 0o600))
	must(t, os.Chmod(public, 0o644))
	must(t, os.Chown(group, 0, 1000))
	must(t, os.Chmod(group, 0o660))
	drop := filepath.Join(d, "drop")
	must(t, os.Mkdir(drop, 0o777))
	must(t, os.Chmod(drop, 0o777)) // not subject to umask
	closed := filepath.Join(d, "closed")
	must(t, os.Mkdir(closed, 0o700))
	writeFile(t, filepath.Join(closed, "inside"), []byte("x"))

	checks := []struct {
		what string
		args []string
		want syscall.Errno
	}{
		{"read a 0600 root file", []string{"read", secret}, syscall.EACCES},
		{"write a 0600 root file", []string{"write", secret}, syscall.EACCES},
		{"read a 0644 root file", []string{"read", public}, 0},
		{"write a 0644 root file", []string{"write", public}, syscall.EACCES},
		{"read a 0660 root:1000 file (group)", []string{"read", group}, 0},
		{"write a 0660 root:1000 file (group)", []string{"write", group}, 0},
		{"create in a 0755 root directory", []string{"create", filepath.Join(d, "new")}, syscall.EACCES},
		{"unlink in a 0755 root directory", []string{"unlink", public}, syscall.EACCES},
		{"chmod of a root file", []string{"chmod", public}, syscall.EPERM},
		{"stat below a 0700 root directory", []string{"stat", filepath.Join(closed, "inside")}, syscall.EACCES},
		{"create in a 0777 directory", []string{"create", filepath.Join(drop, "mine")}, 0},
		{"mkdir in a 0777 directory", []string{"mkdir", filepath.Join(drop, "mydir")}, 0},
		{"chmod of an own file", []string{"chmod", filepath.Join(drop, "mine")}, 0},
	}
	for _, c := range checks {
		if got := as(c.args...); got != c.want {
			t.Errorf("uid 1000: %s: got %v (%d), want %v (%d)", c.what, errnoName(got), got, errnoName(c.want), c.want)
		}
	}
	for _, n := range []string{"mine", "mydir"} {
		st := stat(t, filepath.Join(drop, n))
		if st.Uid != 1000 || st.Gid != 1000 {
			t.Errorf("%s created by uid 1000 is owned by %d:%d, want 1000:1000", n, st.Uid, st.Gid)
		}
	}
	// Root is not held back by the mode bits.
	wantContent(t, secret, []byte("secret"))
}

func errnoName(e syscall.Errno) string {
	if e == 0 {
		return "success"
	}
	return strings.ToUpper(e.Error())
}
