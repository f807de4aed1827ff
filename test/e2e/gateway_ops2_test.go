package e2e

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"tessera/test/cluster"
)

// Issue 14 items 1 and 6: what the gateway still lacked for users.

// statTree maps each path under dir to its type, mode, size, mtime and
// content (symlinks: target): a change of any shows.
func statTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		s := fmt.Sprintf("%v %d %d", fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			s += " -> " + target
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			s += fmt.Sprintf(" %x", b)
		}
		out[rel] = s
		return nil
	})
	must(t, err)
	return out
}

// TestGatewayReadOnlyRefusesUpdates: in a read-only fileset every local
// update through a real mount fails with EROFS (create, mkdir, an open
// for writing or truncating, truncate, unlink, rmdir, rename, chmod,
// utimes, symlink, link, setxattr) and changes nothing at home or in the
// cache (no file is fetched to be refused); reads, listing, prefetch and
// evict keep working.
func TestGatewayReadOnlyRefusesUpdates(t *testing.T) {
	c := startCluster(t, withBlockServers(1), func(o *cluster.Options) { o.Args = append(o.Args, "--gateways", "1") })
	home := filepath.Join(t.TempDir(), "home")
	must(t, os.MkdirAll(filepath.Join(home, "d", "sub"), 0o755))
	want := map[string][]byte{
		"top":   []byte("at the fileset's root\n"),
		"d/f":   randBytes(7, 5<<20+17), // over one 4 MiB block
		"d/g":   []byte("second file\n"),
		"d/sub": nil,
	}
	for rel, b := range want {
		if b != nil {
			writeFile(t, filepath.Join(home, rel), b)
		}
	}
	must(t, os.Symlink("f", filepath.Join(home, "d", "ln")))
	cache := filepath.Join(c.Mount(), "cache")
	filesetCmd(t, c, "create", cache, "--home", "file://"+home, "--mode", "ro", "--validity-lag", "1h")
	names(t, cache)
	names(t, filepath.Join(cache, "d")) // placeholders, nothing fetched
	homeBefore := statTree(t, home)
	cachedLine := regexp.MustCompile(`cached +.* in \d+ files whole, \d+ partly; \d+ placeholders`)
	cached := func() string {
		t.Helper()
		st := filesetCmd(t, c, "status", cache)
		m := cachedLine.FindString(st.Stdout)
		if m == "" {
			t.Fatalf("fileset status shows no cached line:\n%s", st.Stdout)
		}
		return m
	}
	before := cached()

	at := func(rel string) string { return filepath.Join(cache, rel) }
	ops := []struct {
		name string
		do   func() error
	}{
		{"create", func() error {
			f, err := os.OpenFile(at("d/new"), os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o644)
			if err == nil {
				f.Close()
			}
			return err
		}},
		{"create at the root", func() error { return os.WriteFile(at("new"), []byte("x"), 0o644) }},
		{"mkdir", func() error { return os.Mkdir(at("d/newdir"), 0o755) }},
		{"open for writing", func() error {
			// The open itself must fail: a write(2) that says yes
			// and a close that says EROFS lose what was written.
			f, err := os.OpenFile(at("d/f"), os.O_WRONLY, 0)
			if err == nil {
				_, werr := f.Write([]byte("local"))
				return fmt.Errorf("open succeeded (write: %v, close: %v)", werr, f.Close())
			}
			return err
		}},
		{"open read-write", func() error {
			f, err := os.OpenFile(at("d/g"), os.O_RDWR, 0)
			if err == nil {
				f.Close()
			}
			return err
		}},
		{"open with O_TRUNC", func() error {
			f, err := os.OpenFile(at("top"), os.O_WRONLY|os.O_TRUNC, 0)
			if err == nil {
				f.Close()
			}
			return err
		}},
		{"truncate", func() error { return os.Truncate(at("d/f"), 3) }},
		{"unlink", func() error { return os.Remove(at("d/g")) }},
		{"rmdir", func() error { return syscall.Rmdir(at("d/sub")) }},
		{"rename", func() error { return os.Rename(at("d/g"), at("d/h")) }},
		{"chmod", func() error { return os.Chmod(at("d/g"), 0o600) }},
		{"utimes", func() error { return os.Chtimes(at("top"), time.Unix(1, 0), time.Unix(1, 0)) }},
		{"symlink", func() error { return os.Symlink("g", at("d/s")) }},
		{"link", func() error { return os.Link(at("d/g"), at("d/hard")) }},
		{"setxattr", func() error { return unix.Setxattr(at("d/g"), "user.k", []byte("v"), 0) }},
		{"removexattr", func() error { return unix.Removexattr(at("d/g"), "user.k") }},
	}
	for _, op := range ops {
		if err := op.do(); !errors.Is(err, syscall.EROFS) {
			t.Errorf("%s in a read-only fileset: %v, want EROFS", op.name, err)
		}
	}

	if got := statTree(t, home); !equalMaps(got, homeBefore) {
		t.Errorf("home changed:\n got %v\nwant %v", got, homeBefore)
	}
	if got := cached(); got != before {
		t.Errorf("the refused updates changed the cache: status %q, before %q", got, before)
	}
	// Reading keeps working: the cache serves home's tree as it was.
	for rel, b := range want {
		if b != nil {
			wantContent(t, at(rel), b)
		}
	}
	if got := statTree(t, cache); len(got) != len(homeBefore) {
		t.Errorf("the cache lists %d paths, home %d: %v", len(got), len(homeBefore), got)
	}
	filesetCmd(t, c, "evict", cache)
	filesetCmd(t, c, "prefetch", at("d/f"))
	wantContent(t, at("d/f"), want["d/f"])
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
