package e2e

// A `tar -x` into the mount and `tar -d` against the archive (issue 11,
// item 3): GNU tar sets each file's mtime with futimens on the descriptor
// it wrote, before closing it, and restores modes and owners.

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestTarRoundTrip extracts an archive of a tree made for the test (sizes
// around the inline limit and the block size, modes, set-id bits, owners,
// nanosecond mtimes in the past, symlinks, hard links, empty files and
// directories) and of Go's net/http sources into the mount, under each
// detail policy, and wants `tar -d` to report no difference.
func TestTarRoundTrip(t *testing.T) {
	if _, err := exec.LookPath("tar"); err != nil {
		t.Skip("no tar")
	}
	src := t.TempDir()
	makeTarTree(t, src)
	archives := map[string]string{"made": filepath.Join(t.TempDir(), "made.tar")}
	tarRun(t, "", "--format=posix", "-C", src, "-cf", archives["made"], ".")
	if out, err := exec.Command("go", "env", "GOROOT").Output(); err == nil {
		goroot := strings.TrimSpace(string(out))
		if _, err := os.Stat(filepath.Join(goroot, "src", "net", "http")); err == nil {
			archives["net-http"] = filepath.Join(t.TempDir(), "http.tar")
			tarRun(t, "", "-C", filepath.Join(goroot, "src"), "-cf", archives["net-http"], "net/http")
		}
	}
	forPolicies(t, func(t *testing.T, d string) {
		for name, a := range archives {
			dst := filepath.Join(d, name)
			must(t, os.Mkdir(dst, 0o755))
			tarRun(t, "", "-C", dst, "-xf", a)
			if out := tarRun(t, "diff", "-C", dst, "-df", a); out != "" {
				lines := strings.Split(strings.TrimSpace(out), "\n")
				t.Errorf("%s: tar -d reports %d differences, e.g.\n%s", name, len(lines), strings.Join(lines[:min(len(lines), 10)], "\n"))
			}
		}
	})
}

// tarRun runs tar with args and returns its output; a failure is fatal,
// except an exit status 1 when what is "diff" (tar -d found differences).
func tarRun(t *testing.T, what string, args ...string) string {
	t.Helper()
	cmd := exec.Command("tar", args...)
	cmd.WaitDelay = time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); !ok || what != "diff" || ee.ExitCode() != 1 {
			t.Fatalf("tar %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	return string(out)
}

// makeTarTree fills dir with what tar must bring back.
func makeTarTree(t *testing.T, dir string) {
	t.Helper()
	at := func(i int) time.Time { return time.Unix(1400000000+int64(i)*86400, int64(i)*123456789%1e9) }
	sizes := []int{0, 1, 100, 4095, 4096, 65535, 65536, 65537, 300000, 4<<20 + 17}
	modes := []os.FileMode{0o644, 0o755, 0o600, 0o444, 0o640 | os.ModeSetgid, 0o755 | os.ModeSetuid, 0o1777 &^ 0o1000}
	var paths []string
	for i, n := range sizes {
		sub := filepath.Join(dir, fmt.Sprintf("d%d", i%3), fmt.Sprintf("e%d", i%2))
		must(t, os.MkdirAll(sub, 0o755))
		p := filepath.Join(sub, fmt.Sprintf("f%d", i))
		must(t, os.WriteFile(p, bytes.Repeat([]byte{byte('a' + i)}, n), 0o600))
		must(t, os.Chmod(p, modes[i%len(modes)]))
		if i%4 == 3 {
			must(t, os.Chown(p, 1000, 1000))
		}
		paths = append(paths, p)
	}
	must(t, os.Symlink("d0/e0/f0", filepath.Join(dir, "link")))
	must(t, os.Symlink("nowhere", filepath.Join(dir, "d1", "dangling")))
	must(t, os.Link(paths[4], filepath.Join(dir, "hard")))
	must(t, os.Mkdir(filepath.Join(dir, "empty"), 0o700))
	// Times last, deepest first, so that making entries does not move them.
	for i, p := range paths {
		must(t, os.Chtimes(p, at(i), at(i)))
	}
	for _, p := range []string{"link", "d1/dangling"} {
		ts := []unix.Timespec{unix.NsecToTimespec(at(20).UnixNano()), unix.NsecToTimespec(at(21).UnixNano())}
		must(t, unix.UtimesNanoAt(unix.AT_FDCWD, filepath.Join(dir, p), ts, unix.AT_SYMLINK_NOFOLLOW))
	}
	for i, p := range []string{"d0/e0", "d0/e1", "d1/e0", "d1/e1", "d2/e0", "d2/e1", "d0", "d1", "d2", "empty"} {
		must(t, os.Chtimes(filepath.Join(dir, p), at(30+i), at(30+i)))
	}
}
