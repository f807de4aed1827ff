package e2e

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"tessera/test/cluster"
)

// TestClusterSites (issue 13 items 3 and 4) runs three sites on this
// machine: a meta service (--site a), two block servers per site (b0, b1 in
// a; b2, b3 in b; b4, b5 in c) and mounts with --site a and --site c. A
// directory replicated a:1,b:1,c:1 (a bad spec is refused with EINVAL) gets
// a file written at site a while site b's servers are stopped: the write
// and its fsync succeed on sites a and c (two of three), and site c reads
// it back. Once site b is back, the mover gives it its copies: every block
// ends with one copy in each site.
func TestClusterSites(t *testing.T) {
	sites := []string{"a", "a", "b", "b", "c", "c"}
	m := startMultiOpts(t, cluster.MultiOptions{BlockServers: len(sites),
		MetaArgs: []string{"--site", "a", "--replicas", "1", "--block-size", itoa(64 * kib),
			"--mover-interval", "1s", "--down-after", "3s"},
		ServerArgs: func(i int) []string { return []string{"--site", sites[i]} }})
	w := addMount(t, m, "--site", "a")
	r := addMount(t, m, "--site", "c")
	bySite := func(site string) []*cluster.Daemon {
		var out []*cluster.Daemon
		for i, d := range m.Servers() {
			if sites[i] == site {
				out = append(out, d)
			}
		}
		return out
	}

	dir := filepath.Join(w.Mount(), "d")
	must(t, os.Mkdir(dir, 0o755))
	const xattr = "user.tessera.replicas"
	if err := unix.Setxattr(dir, xattr, []byte("a:1,b:x"), 0); !errors.Is(err, unix.EINVAL) {
		t.Fatalf("setxattr %s a:1,b:x: %v, want EINVAL", xattr, err)
	}
	must(t, unix.Setxattr(dir, xattr, []byte("c:1,a:1,b:1"), 0))
	buf := make([]byte, 64)
	n, err := unix.Getxattr(dir, xattr, buf)
	if err != nil || string(buf[:n]) != "a:1,b:1,c:1" {
		t.Fatalf("getxattr %s = %q, %v; want the canonical a:1,b:1,c:1", xattr, buf[:max(n, 0)], err)
	}

	for _, d := range bySite("b") {
		must(t, d.Stop())
	}
	const blocks = 32
	s := newStream(13, blocks*64*kib)
	path := filepath.Join(dir, "f")
	if err := writeStream(path, s, 0, nil); err != nil {
		t.Fatalf("write with site b down: %v", err)
	}
	must(t, checkStream(filepath.Join(r.Mount(), "d", "f"), s, nil))
	inA, inB, inC := copiesOnDisk(t, bySite("a")...), copiesOnDisk(t, bySite("b")...), copiesOnDisk(t, bySite("c")...)
	if len(inA) != blocks || len(inC) != blocks || len(inB) != 0 {
		t.Fatalf("blocks on disk with site b down: a %d, b %d, c %d; want %d, 0, %d", len(inA), len(inB), len(inC), blocks, blocks)
	}
	for h, n := range inA {
		if n != 1 || inC[h] != 1 {
			t.Fatalf("block %s: %d copies in site a, %d in c; want one in each", h, n, inC[h])
		}
	}

	for _, d := range bySite("b") {
		must(t, d.Start())
	}
	after := roundAfterNow(t, m)
	waitFor(t, m, 2*time.Minute, "site b's copies restored", func(st cluster.ClusterStatus) bool {
		return after(st) && repaired(len(sites))(st)
	})
	inB = copiesOnDisk(t, bySite("b")...)
	for h := range inA {
		if inB[h] != 1 {
			t.Errorf("block %s: %d copies in site b after the repair, want 1", h, inB[h])
		}
	}
	must(t, checkStream(path, s, nil))
}
