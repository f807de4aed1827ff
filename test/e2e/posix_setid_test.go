package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// TestTruncateChownClearSetID: the set-id bits go where Linux clears them
// on a local file system (checked against ext4): a truncate, an open with
// O_TRUNC and one with O_CREAT|O_TRUNC of an existing file by a user
// without CAP_FSETID clear the set-user-ID bit, and the set-group-ID bit
// of a group-executable file; a chown, by root too, clears the same bits
// of a file whatever its new owner; a truncate by root clears nothing.
// The mount takes FUSE's HANDLE_KILLPRIV_V2 (issue 28): the kernel then
// leaves all of this to the file system, flagging the requests instead.
func TestTruncateChownClearSetID(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a child as uid 65534")
	}
	cases := []struct{ mode, want uint32 }{
		{0o4777, 0o777},
		{0o2777, 0o777},
		{0o6777, 0o777},
		{0o0777, 0o777},
	}
	nobody := &syscall.Credential{Uid: 65534, Gid: 65534}
	setMode := func(t *testing.T, p string, m uint32) {
		t.Helper()
		must(t, os.Chmod(p, os.FileMode(m&0o777)|modeBits(m)))
		if got := stat(t, p).Mode & 0o7777; got != m {
			t.Fatalf("chmod %o: mode %o", m, got)
		}
	}
	forPolicies(t, func(t *testing.T, d string) {
		for i, c := range cases {
			for _, op := range []string{"truncate", "opentrunc", "createtrunc"} {
				p := filepath.Join(d, op+strconv.Itoa(i))
				writeFile(t, p, []byte("some bytes"))
				setMode(t, p, c.mode)
				res := helper(t, nobody, op, p)
				if res.Errno != 0 {
					t.Fatalf("%s of mode %o as uid 65534: %v", op, c.mode, res.Errno)
				}
				if res.Extra != "" && res.Extra != strconv.FormatUint(uint64(c.want), 8) {
					t.Errorf("%s of mode %o as uid 65534: fstat says %s, want %o", op, c.mode, res.Extra, c.want)
				}
				st := stat(t, p)
				if got := st.Mode & 0o7777; got != c.want {
					t.Errorf("%s of mode %o as uid 65534: mode %o, want %o", op, c.mode, got, c.want)
				}
				if st.Size != 0 {
					t.Errorf("%s as uid 65534: size %d, want 0", op, st.Size)
				}
			}
			// chown, as root, to another owner and to the same one
			for j, uid := range []int{65534, 0} {
				p := filepath.Join(d, "chown"+strconv.Itoa(i)+"-"+strconv.Itoa(j))
				writeFile(t, p, nil)
				setMode(t, p, c.mode)
				must(t, os.Chown(p, uid, uid))
				st := stat(t, p)
				if got := st.Mode & 0o7777; got != c.want {
					t.Errorf("chown to %d of mode %o: mode %o, want %o", uid, c.mode, got, c.want)
				}
				if int(st.Uid) != uid || int(st.Gid) != uid {
					t.Errorf("chown to %d: owner %d:%d", uid, st.Uid, st.Gid)
				}
			}
			// a truncate by root (CAP_FSETID) keeps them
			p := filepath.Join(d, "roottrunc"+strconv.Itoa(i))
			writeFile(t, p, []byte("x"))
			setMode(t, p, c.mode)
			must(t, os.Truncate(p, 0))
			if got := stat(t, p).Mode & 0o7777; got != c.mode {
				t.Errorf("truncate by root of mode %o: mode %o, want it kept", c.mode, got)
			}
		}
		// the set-group-ID bit of a file that is not group-executable
		// marks mandatory locking: a chown keeps it
		p := filepath.Join(d, "chown-sgid-noexec")
		writeFile(t, p, nil)
		setMode(t, p, 0o2767)
		must(t, os.Chown(p, 65534, 65534))
		if got := stat(t, p).Mode & 0o7777; got != 0o2767 {
			t.Errorf("chown of mode 2767: mode %o, want 2767", got)
		}
	})
}
