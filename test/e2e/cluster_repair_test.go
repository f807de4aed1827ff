package e2e

import (
	"bytes"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"tessera/test/cluster"
)

// TestClusterCorruptReplicaRepaired flips one byte of one block file on
// one server, reads the file from a fresh mount and requires the right
// bytes (from another replica), then the bad copy replaced on that server.
//
// Which replica a read tries first is the client's choice; the contract
// fixes it only for a server on the client's own host ("same host first").
// So b0 carries this machine's host name as its label (the others h1…h4)
// and the corrupt copy is b0's: the read must meet it first, whether the
// client takes the co-located fast path (the block file read directly)
// or goes over the network.
func TestClusterCorruptReplicaRepaired(t *testing.T) {
	host, err := os.Hostname()
	must(t, err)
	m := startMultiOpts(t, cluster.MultiOptions{
		BlockServers: 5,
		MetaArgs:     []string{"--replicas", "3", "--block-size", "65536", "--mover-interval", "1s", "--down-after", "3s"},
		ServerArgs: func(i int) []string {
			if i == 0 {
				return []string{"--host", host}
			}
			return nil
		},
	})
	w := addMount(t, m)
	s := newStream(3, 4*mib) // 64 blocks; b0 holds about 38 of them
	must(t, writeStream(filepath.Join(w.Mount(), "f"), s, 0, nil))
	fresh := roundAfterNow(t, m)
	waitFor(t, m, 2*time.Minute, "3 copies of every block", func(st cluster.ClusterStatus) bool {
		return fresh(st) && repaired(5)(st)
	})

	b0 := m.Servers()[0]
	files, err := b0.BlockFiles()
	must(t, err)
	if len(files) == 0 {
		t.Fatalf("b0 holds no block of a 64-block file with R=3 over 5 servers")
	}
	h := slices.Sorted(maps.Keys(files))[0]
	path := files[h]
	good, err := os.ReadFile(path)
	must(t, err)
	bad := bytes.Clone(good)
	bad[len(bad)/2] ^= 0x40
	must(t, os.WriteFile(path, bad, 0o644))
	t.Logf("corrupted %s (%d bytes) on b0", path, len(good))

	r := addMount(t, m)
	if err := checkStream(filepath.Join(r.Mount(), "f"), s, nil); err != nil {
		t.Fatalf("read with one corrupt replica on the nearest server: %v", err)
	}

	deadline := time.Now().Add(time.Minute)
	for {
		got, err := os.ReadFile(path)
		if err == nil && bytes.Equal(got, good) {
			break
		}
		if time.Now().After(deadline) {
			switch {
			case err != nil:
				t.Fatalf("b0's copy of block %s is not back within a minute of the read: %v", h, err)
			case bytes.Equal(got, bad):
				t.Fatalf("b0's copy of block %s is still the corrupt one a minute after the read", h)
			default:
				t.Fatalf("b0's copy of block %s (%d bytes) is neither the good nor the corrupt one a minute after the read", h, len(got))
			}
		}
		time.Sleep(250 * time.Millisecond)
	}
	fresh = roundAfterNow(t, m)
	waitFor(t, m, 2*time.Minute, "nothing under-replicated after the repair", func(st cluster.ClusterStatus) bool {
		return fresh(st) && repaired(5)(st)
	})
	// And the whole file still reads right through yet another cold mount.
	r2 := addMount(t, m)
	must(t, checkStream(filepath.Join(r2.Mount(), "f"), s, nil))
}
