package e2e

import (
	"bytes"
	"crypto/rand"
	"os"
	"path/filepath"
	"testing"
	"time"

	"tessera/test/cluster"
)

// testNearbyRead: a 1 MiB file written at A with one copy per site; once
// C's block servers hold every block A's do (the background completion),
// a fresh mount at C (cold caches) reads it, and the links from C into
// the other sites' block servers carry less than one block meanwhile.
func testNearbyRead(t *testing.T, s *cluster.Sites) {
	at := siteDir(t, s, "nearby", "session")
	want := make([]byte, 1<<20)
	rand.Read(want)
	writeFileSync(t, filepath.Join(at[siteA], "f"), want)

	var missing int
	for range 240 {
		onC := copiesOnDisk(t, s.Servers(siteC)...)
		missing = 0
		for h := range copiesOnDisk(t, s.Servers(siteA)...) {
			if onC[h] == 0 {
				missing++
			}
		}
		if missing == 0 {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if missing > 0 {
		t.Fatalf("after 2 minutes site C still lacks %d blocks that site A holds", missing)
	}

	m, err := s.AddMount(siteC)
	must(t, err)
	before := s.BlockBytesFrom(siteC)
	got, err := os.ReadFile(filepath.Join(m.Mount(), "nearby", "f"))
	must(t, err)
	if !bytes.Equal(got, want) {
		t.Fatalf("a fresh mount at C read %d bytes, not the %d written at A", len(got), len(want))
	}
	if moved := s.BlockBytesFrom(siteC) - before; moved >= consistencyBlockSize {
		t.Errorf("reading 1 MiB at C fetched %d bytes from other sites' block servers; want every block from C's own", moved)
	}
}
