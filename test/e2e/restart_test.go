package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

// TestRestartKeepsEverything stops `tessera up` cleanly and starts it again
// on the same data directory: names, data, links, modes, owners, times and
// xattrs all come back.
func TestRestartKeepsEverything(t *testing.T) {
	c := startCluster(t)
	m := c.Mount()
	small := []byte("inline-sized")
	large := randBytes(40, 9*mib+7)
	must(t, os.MkdirAll(filepath.Join(m, "a", "b"), 0o750))
	writeFile(t, filepath.Join(m, "a", "small"), small)
	writeFile(t, filepath.Join(m, "a", "b", "large"), large)
	sparse := filepath.Join(m, "sparse")
	must(t, os.WriteFile(sparse, nil, 0o644))
	must(t, os.Truncate(sparse, 100*mib))
	must(t, os.Symlink("a/small", filepath.Join(m, "link")))
	must(t, os.Link(filepath.Join(m, "a", "small"), filepath.Join(m, "hard")))
	must(t, os.Chmod(filepath.Join(m, "a", "small"), 0o640))
	must(t, os.Chown(filepath.Join(m, "a", "b", "large"), 1000, 2000))
	times := []unix.Timespec{{Sec: 1111, Nsec: 1}, {Sec: 2222, Nsec: 2}}
	must(t, unix.UtimesNanoAt(unix.AT_FDCWD, filepath.Join(m, "a", "b", "large"), times, 0))
	must(t, unix.Setxattr(filepath.Join(m, "a"), "user.k", []byte("v"), 0))
	before := map[string]unix.Stat_t{}
	for _, p := range []string{"a", "a/b", "a/small", "a/b/large", "sparse", "link", "hard"} {
		before[p] = lstat(t, filepath.Join(m, p))
	}

	restart(t, c)

	if ns := names(t, m); !slices.Equal(ns, []string{"a", "hard", "link", "sparse"}) {
		t.Errorf("root after restart: %v", ns)
	}
	for p, b := range before {
		a := lstat(t, filepath.Join(m, p))
		if a.Ino != b.Ino || a.Mode != b.Mode || a.Uid != b.Uid || a.Gid != b.Gid || a.Size != b.Size || a.Nlink != b.Nlink || a.Mtim != b.Mtim {
			t.Errorf("%s: before restart ino %d mode %o %d:%d size %d nlink %d mtime %v; after ino %d mode %o %d:%d size %d nlink %d mtime %v",
				p, b.Ino, b.Mode, b.Uid, b.Gid, b.Size, b.Nlink, b.Mtim, a.Ino, a.Mode, a.Uid, a.Gid, a.Size, a.Nlink, a.Mtim)
		}
	}
	wantContent(t, filepath.Join(m, "hard"), small)
	wantContent(t, filepath.Join(m, "a", "b", "large"), large)
	wantContent(t, sparse, make([]byte, 100*mib))
	if target, err := os.Readlink(filepath.Join(m, "link")); err != nil || target != "a/small" {
		t.Errorf("symlink after restart: %q %v", target, err)
	}
	v := make([]byte, 8)
	if n, err := unix.Getxattr(filepath.Join(m, "a"), "user.k", v); err != nil || string(v[:n]) != "v" {
		t.Errorf("xattr after restart: %q %v", v[:n], err)
	}
	fsckClean(t, c)
}
