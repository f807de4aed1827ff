package e2e

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"tessera/internal/block"
	"tessera/test/cluster"
)

// Issue 11, item 8: the scrub, fsck's read-only default and --repair, and
// lost blocks named with their files.

// scrubCluster starts meta (R=2, 64 KiB blocks, a mover round every
// second) and n block servers with serverArgs, writes a 1 MiB file "f"
// (16 blocks) through a mount and waits until every block has its two
// copies on disk, and no other copy is left. It returns the cluster, the
// file's content and its inode.
//
// Block k+8 of the file repeats block k (8 distinct blocks, 16 copies), so
// the mount writes each block twice; the second write may choose other
// servers while the first one's copies are still in flight, and a block
// then has a third copy until the mover's next round removes it (any two
// of three candidates are a placement). Corrupting a copy before that
// round could corrupt the one the mover removes, and the scrub would find
// nothing: the wait sees a mover round that began after the write and
// counts the copies on disk.
func scrubCluster(t *testing.T, n int, serverArgs ...string) (*cluster.Multi, []byte, uint64) {
	t.Helper()
	m := startMultiOpts(t, cluster.MultiOptions{
		BlockServers: n,
		MetaArgs:     []string{"--replicas", "2", "--block-size", "65536", "--mover-interval", "1s"},
		ServerArgs:   func(int) []string { return serverArgs },
	})
	w := addMount(t, m)
	data := make([]byte, 1<<20)
	for i := range data {
		data[i] = byte(i*7 + i>>11)
	}
	p := filepath.Join(w.Mount(), "f")
	must(t, os.WriteFile(p, data, 0o644))
	fi, err := os.Stat(p)
	must(t, err)
	want := map[string]bool{}
	for off := 0; off < len(data); off += 65536 {
		want[block.Sum(data[off:off+65536]).String()] = true
	}
	fresh := roundAfterNow(t, m)
	waitFor(t, m, time.Minute, "2 copies of every block", func(st cluster.ClusterStatus) bool {
		return fresh(st) && repaired(n)(st) && exactCopies(t, m, want, 2)
	})
	return m, data, fi.Sys().(*syscall.Stat_t).Ino
}

// exactCopies reports whether the servers of m hold the blocks in want
// (hex names), r copies of each, and no other block.
func exactCopies(t *testing.T, m *cluster.Multi, want map[string]bool, r int) bool {
	t.Helper()
	held := map[string]int{}
	for _, d := range m.Servers() {
		files, err := d.BlockFiles()
		must(t, err)
		for h := range files {
			held[h]++
		}
	}
	if len(held) != len(want) {
		return false
	}
	for h, c := range held {
		if !want[h] || c != r {
			return false
		}
	}
	return true
}

// corruptOne flips a byte in the copy of block h (a hex name) on server d
// and returns the good and the corrupt content.
func corruptOne(t *testing.T, d *cluster.Daemon, h string) (good, bad []byte) {
	t.Helper()
	files, err := d.BlockFiles()
	must(t, err)
	path, ok := files[h]
	if !ok {
		t.Fatalf("%s holds no copy of %s", d.ID(), h)
	}
	good, err = os.ReadFile(path)
	must(t, err)
	bad = bytes.Clone(good)
	bad[len(bad)/3] ^= 0x08
	must(t, os.WriteFile(path, bad, 0o644))
	return good, bad
}

// sharedBlock returns a block (hex name) held by both servers a and b.
func sharedBlock(t *testing.T, a, b *cluster.Daemon) string {
	t.Helper()
	fa, err := a.BlockFiles()
	must(t, err)
	fb, err := b.BlockFiles()
	must(t, err)
	for _, h := range slices.Sorted(maps.Keys(fa)) {
		if _, ok := fb[h]; ok {
			return h
		}
	}
	t.Fatalf("%s and %s share no block", a.ID(), b.ID())
	return ""
}

// goodCopies counts the servers holding block h with content good.
func goodCopies(t *testing.T, m *cluster.Multi, h string, good []byte) int {
	t.Helper()
	n := 0
	for _, d := range m.Servers() {
		files, err := d.BlockFiles()
		must(t, err)
		if p, ok := files[h]; ok {
			if got, err := os.ReadFile(p); err == nil && bytes.Equal(got, good) {
				n++
			}
		}
	}
	return n
}

func quarantined(t *testing.T, d *cluster.Daemon) []string {
	t.Helper()
	q, err := filepath.Glob(filepath.Join(d.DataDir(), "quarantine", "*"))
	must(t, err)
	return q
}

func runTessera(t *testing.T, m *cluster.Multi, args ...string) cluster.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := m.Run(ctx, args...)
	must(t, err)
	return res
}

// TestClusterScrubRepairsCorruptReplica: a flipped byte in one copy on
// disk, nobody reading it: the scrub of its server finds it, moves it
// aside, the mover restores it from the good copy, and status shows the
// scrub's progress and the corrupt copy found.
func TestClusterScrubRepairsCorruptReplica(t *testing.T) {
	m, data, _ := scrubCluster(t, 3, "--scrub-interval", "1s")
	b0 := m.Servers()[0]
	files, err := b0.BlockFiles()
	must(t, err)
	if len(files) == 0 {
		t.Fatal("b0 holds no block of a 16-block file with R=2 over 3 servers")
	}
	h := slices.Sorted(maps.Keys(files))[0]
	good, _ := corruptOne(t, b0, h)
	st := waitFor(t, m, time.Minute, "the scrub finds the corrupt copy and the mover restores it", func(st cluster.ClusterStatus) bool {
		// The mover may put the new copy on another server than b0:
		// any two of a block's three candidates are a placement.
		return st.CorruptFound >= 1 && repaired(3)(st) && goodCopies(t, m, h, good) == 2
	})
	if st.CorruptFound != 1 || st.Server["b0"].ScrubCorrupt != 1 {
		t.Fatalf("corrupt copies found: %d (b0: %d); want 1 on b0:\n%s", st.CorruptFound, st.Server["b0"].ScrubCorrupt, st.Text)
	}
	if st.ScrubRounds < 1 || st.ScrubbedBlocks < 1 || st.ScrubbedBytes < 1 {
		t.Fatalf("no scrub progress in status:\n%s", st.Text)
	}
	if q := quarantined(t, b0); len(q) != 1 || !strings.HasPrefix(filepath.Base(q[0]), h) {
		t.Fatalf("b0's quarantine: %v; want the corrupt copy of %s", q, h)
	}
	r := addMount(t, m)
	got, err := os.ReadFile(filepath.Join(r.Mount(), "f"))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("the file after the repair: %d bytes, %v", len(got), err)
	}
}

// TestClusterLostBlockReported: every copy of a block rots; the scrub moves
// both aside and status and fsck report the block lost, naming the file's
// inode.
func TestClusterLostBlockReported(t *testing.T) {
	m, _, ino := scrubCluster(t, 2, "--scrub-interval", "1s")
	b0, b1 := m.Servers()[0], m.Servers()[1]
	h := sharedBlock(t, b0, b1)
	corruptOne(t, b0, h)
	corruptOne(t, b1, h)
	st := waitFor(t, m, time.Minute, "block "+h+" reported lost", func(st cluster.ClusterStatus) bool {
		return st.Lost >= 1 && st.LostBlocks[h] != ""
	})
	if st.Lost != 1 || !strings.Contains(st.LostBlocks[h], fmt.Sprintf("inodes %d", ino)) {
		t.Fatalf("status: lost %d, %q; want block %s lost naming inode %d:\n%s", st.Lost, st.LostBlocks[h], h, ino, st.Text)
	}
	if st.UnderReplicated == 0 {
		t.Fatalf("a lost block and 0 under-replicated:\n%s", st.Text)
	}
	res := runTessera(t, m, "fsck")
	want := fmt.Sprintf("block %s: LOST", h)
	if res.ExitCode == 0 || !strings.Contains(res.Stdout, want) || !strings.Contains(res.Stdout, fmt.Sprintf("inode %d block", ino)) {
		t.Fatalf("fsck: exit %d; want %q naming inode %d:\n%s%s", res.ExitCode, want, ino, res.Stdout, res.Stderr)
	}
}

// TestClusterFsckReadOnlyThenRepair: with the scrub off, fsck reports a
// corrupt copy and changes nothing on disk; fsck --repair moves it aside
// and the mover restores it from the good copy.
func TestClusterFsckReadOnlyThenRepair(t *testing.T) {
	m, _, ino := scrubCluster(t, 2, "--scrub-rate", "0")
	b0, b1 := m.Servers()[0], m.Servers()[1]
	h := sharedBlock(t, b0, b1)
	good, bad := corruptOne(t, b0, h)
	files, err := b0.BlockFiles()
	must(t, err)

	res := runTessera(t, m, "fsck")
	if res.ExitCode == 0 || !strings.Contains(res.Stdout, fmt.Sprintf("block %s on server b0: corrupt copy", h)) ||
		!strings.Contains(res.Stdout, fmt.Sprintf("inode %d block", ino)) {
		t.Fatalf("fsck: exit %d; want the corrupt copy on b0 reported with inode %d:\n%s%s", res.ExitCode, ino, res.Stdout, res.Stderr)
	}
	if got, err := os.ReadFile(files[h]); err != nil || !bytes.Equal(got, bad) {
		t.Fatalf("fsck without --repair changed b0's copy of %s (%v)", h, err)
	}
	if q := quarantined(t, b0); len(q) != 0 {
		t.Fatalf("fsck without --repair quarantined %v", q)
	}

	res = runTessera(t, m, "fsck", "--repair")
	if res.ExitCode == 0 || !strings.Contains(res.Stdout, "moved aside") {
		t.Fatalf("fsck --repair: exit %d:\n%s%s", res.ExitCode, res.Stdout, res.Stderr)
	}
	if q := quarantined(t, b0); len(q) != 1 || !strings.HasPrefix(filepath.Base(q[0]), h) {
		t.Fatalf("b0's quarantine after --repair: %v; want the corrupt copy of %s", q, h)
	}
	waitFor(t, m, time.Minute, "the mover restores the copy fsck moved aside", func(st cluster.ClusterStatus) bool {
		return repaired(2)(st) && goodCopies(t, m, h, good) == 2
	})
	if res := runTessera(t, m, "fsck"); res.ExitCode != 0 {
		t.Fatalf("fsck after the repair: exit %d:\n%s%s", res.ExitCode, res.Stdout, res.Stderr)
	}
}
