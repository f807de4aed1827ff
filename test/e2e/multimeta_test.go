package e2e

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	"tessera/internal/kv/etcdkv/etcdtest"
	"tessera/test/cluster"
)

// TestLeaseCallbackCrossesMetas (issue 13): two `tessera meta` processes
// over one etcd; a mount of each, under the posix policy (a coherent cache:
// what a mount caches it keeps until a callback says otherwise). A change
// written through the mount of meta A is read at once through the mount of
// meta B, which had the old content cached: the change's callback crossed
// from A to B before A's write returned.
func TestLeaseCallbackCrossesMetas(t *testing.T) {
	needBinary(t)
	etcd := etcdtest.Start(t, 1)
	m := startMultiOpts(t, cluster.MultiOptions{BlockServers: 2, MetaDB: etcd.URL("/cb")})
	metaB, err := m.AddMeta()
	must(t, err)
	mntA := addMount(t, m, "--policy", "posix").Mount()
	mntB := addMount(t, m, "--meta", metaB.Addr(), "--policy", "posix").Mount()

	pa, pb := filepath.Join(mntA, "f"), filepath.Join(mntB, "f")
	one := bytes.Repeat([]byte("one."), 4096)
	must(t, os.WriteFile(pa, one, 0o644))
	// B keeps the file open: an open asks meta for the inode (and so
	// would see a change); reads on an open handle are served from B's
	// cache while its lease lasts.
	fb, err := os.Open(pb)
	must(t, err)
	defer fb.Close()
	read := func() []byte {
		t.Helper()
		got := make([]byte, 2*len(one))
		n, err := fb.ReadAt(got, 0)
		if err != nil && err != io.EOF {
			t.Fatalf("read through meta B: %v", err)
		}
		return got[:n]
	}
	for i := range 2 { // the second read is served from B's cache
		if got := read(); !bytes.Equal(got, one) {
			t.Fatalf("read %d through meta B: %d bytes; want the %d written through A", i, len(got), len(one))
		}
	}
	two := bytes.Repeat([]byte("TWO!"), 4096)
	f, err := os.OpenFile(pa, os.O_WRONLY, 0)
	must(t, err)
	_, err = f.WriteAt(two, 0)
	must(t, err)
	must(t, f.Close())
	// posix: linearizable. No waiting: the write has returned.
	if got := read(); !bytes.Equal(got, two) {
		t.Fatalf("after the write through meta A returned, meta B's mount reads %.16q… (%d bytes); want the new content", got, len(got))
	}
}
