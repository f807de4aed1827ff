package e2e

import (
	"archive/tar"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"tessera/test/cluster"
)

// TestUntarAttrsSurviveRestart: GNU tar extracting as root sets each
// file's owner, mode and times on the descriptor it wrote (fchown,
// fchmod, futimens) before closing it; under session the mount holds
// those changes for the close's commit (internal/client/pendattr.go).
// `tar -d` finds every file's owner, mode, mtime and content as archived,
// right after the extraction and again after a restart (a fresh client
// reading what the meta service committed); under posix too.
func TestUntarAttrsSurviveRestart(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: tar sets owners only as root")
	}
	if _, err := exec.LookPath("tar"); err != nil {
		t.Skipf("no tar: %v", err)
	}
	archive := filepath.Join(t.TempDir(), "a.tar")
	f, err := os.Create(archive)
	must(t, err)
	tw := tar.NewWriter(f)
	mtime := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	must(t, tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: "d/", Mode: 0o750, Uid: 1234, Gid: 5678, ModTime: mtime}))
	for i, mode := range []int64{0o640, 0o755, 0o600, 0o444, 0o2755} {
		data := randBytes(uint64(100+i), 1000*(i+1))
		must(t, tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: filepath.Join("d", string(rune('a'+i))),
			Mode: mode, Uid: 1000 + i, Gid: 2000 + i, Size: int64(len(data)), ModTime: mtime.Add(time.Duration(i) * time.Hour)}))
		_, err := tw.Write(data)
		must(t, err)
	}
	must(t, tw.Close())
	must(t, f.Close())
	for _, policy := range []string{"session", "posix"} {
		t.Run(policy, func(t *testing.T) {
			c := startCluster(t, func(o *cluster.Options) { o.Args = append(o.Args, "--policy", policy) })
			run := func(args ...string) {
				t.Helper()
				out, err := exec.Command("tar", args...).CombinedOutput()
				if err != nil {
					t.Fatalf("tar %v: %v\n%s", args, err, out)
				}
			}
			run("-xpf", archive, "--same-owner", "-C", c.Mount())
			run("-df", archive, "-C", c.Mount())
			restart(t, c)
			run("-df", archive, "-C", c.Mount())
			fsckClean(t, c)
		})
	}
}
