package e2e

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"tessera/internal/kv/etcdkv/etcdtest"
	"tessera/test/cluster"
)

// replicasXattr is a directory's replication spec (issue 13:
// "siteA:1,siteB:1,siteC:1" names copies per site).
const replicasXattr = "user.tessera.replicas"

// threeSites is the spec of one copy in each of the harness's sites.
const threeSites = "siteA:1,siteB:1,siteC:1"

// Sites A, B and C: indexes into the harness.
const (
	siteA = 0
	siteB = 1
	siteC = 2
)

// startSites starts the three-site harness (rNFS Figure 6 RTTs) with small
// blocks; on failure the whole output is kept in a file named in the log.
func startSites(t *testing.T, mountArgs ...string) *cluster.Sites {
	t.Helper()
	needBinary(t)
	s := cluster.StartSites(t, cluster.SitesOptions{
		Bin: suite.bin, EtcdBin: etcdtest.Binary(t), Dir: t.TempDir(), RTT: sitesRTT,
		MetaArgs: []string{"--block-size", itoa(consistencyBlockSize), "--replicas", "2"},
		// A partitioned site answers with EIO after this wait (issue 13 item 5).
		MountArgs: append([]string{"--meta-timeout", "20s"}, mountArgs...),
	})
	// Registered after StartSites's Close: runs first, while the log is whole.
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("sites output (tail):\n%s", s.LogTail(32<<10))
			p := filepath.Join(os.TempDir(), "tessera-"+sanitize(t.Name())+".log")
			if err := os.WriteFile(p, []byte(s.LogSince(0)), 0o644); err == nil {
				t.Logf("whole sites output: %s", p)
			}
		}
	})
	return s
}

// siteDir makes directory name through site A's mount with one copy per
// site and the given policy, and returns its path at every site.
func siteDir(t *testing.T, s *cluster.Sites, name, policy string) []string {
	t.Helper()
	p := filepath.Join(s.Mount(siteA).Mount(), name)
	must(t, os.Mkdir(p, 0o755))
	if err := unix.Setxattr(p, replicasXattr, []byte(threeSites), 0); err != nil {
		t.Fatalf("setxattr %s %s=%s: %v", p, replicasXattr, threeSites, err)
	}
	if policy != "" {
		setPolicy(t, p, policy)
	}
	var at []string
	for i := range s.Names() {
		at = append(at, filepath.Join(s.Mount(i).Mount(), name))
	}
	return at
}
