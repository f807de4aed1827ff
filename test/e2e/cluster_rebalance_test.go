package e2e

import (
	"math"
	"path/filepath"
	"testing"
	"time"

	"tessera/test/cluster"
)

// TestClusterAddAndDrainServer fills a 4-server cluster (R=3) with 400
// blocks of 64 KiB, adds a fifth server, then drains one.
//
// Adding: rendezvous placement moves a copy only to the new server, never
// between old ones. Each block's 3 copies land on 3 of 5 servers, so the
// new server's count is about Binomial(400, 3/5): mean 240, standard
// deviation √(400·0.6·0.4) ≈ 9.8. The test accepts 240 ± 40 (four standard
// deviations: a correct placement fails about once in 15,000 runs) and
// requires every old server to hold no more than before, 1,200 copies in
// all, and nothing under-replicated. 240 of 1,200 copies moving is the
// 1/N of the issue.
//
// Draining b0: it must end with no block (in status and on disk), the
// others holding 1,200 copies with 3 of each block, and `under-replicated`
// must be 0 at every status poll from the drain command on.
func TestClusterAddAndDrainServer(t *testing.T) {
	const (
		blocks = 400
		bs     = 64 * kib
		r      = 3
	)
	m := startMulti(t, 4, "--replicas", "3", "--block-size", itoa(bs), "--mover-interval", "1s", "--down-after", "3s")
	w := addMount(t, m)
	s := newStream(4, blocks*bs)
	must(t, writeStream(filepath.Join(w.Mount(), "f"), s, 0, nil))
	before := waitFor(t, m, time.Minute, "3 copies of 400 blocks on 4 servers", func(st cluster.ClusterStatus) bool {
		return repaired(4)(st) && totalBlocks(st) == blocks*r
	})
	t.Logf("before: %s", serverLines(before))

	// Add b4.
	rounds := before.MoverRounds
	b4, err := m.AddServer()
	must(t, err)
	after := waitFor(t, m, 2*time.Minute, "the mover settled after adding b4", func(st cluster.ClusterStatus) bool {
		return repaired(5)(st) && st.MoverRounds >= rounds+2 && st.Server[b4.ID()].Blocks > 0
	})
	t.Logf("after adding b4: %s", serverLines(after))
	got := after.Server[b4.ID()].Blocks
	mean := float64(blocks) * r / 5
	sd := math.Sqrt(float64(blocks) * 0.6 * 0.4)
	if math.Abs(float64(got)-mean) > 4*sd {
		t.Errorf("b4 holds %d blocks after the rebalance, want %.0f ± %.0f (R/N of %d blocks)", got, mean, 4*sd, blocks)
	}
	for id, b := range before.Server {
		if a := after.Server[id].Blocks; a > b.Blocks {
			t.Errorf("%s went from %d to %d blocks: adding a server moved copies between old servers", id, b.Blocks, a)
		}
	}
	if n := totalBlocks(after); n != blocks*r {
		t.Errorf("after adding b4 the servers hold %d copies, want %d (old copies not removed?)", n, blocks*r)
	}
	checkDiskMatchesStatus(t, m, after)
	t.Logf("%d of %d copies moved to the new server (%.1f%%)", got, blocks*r, 100*float64(got)/float64(blocks*r))

	// Drain b0.
	b0 := m.Servers()[0]
	var polls, sawDraining int
	var violations []string
	must(t, m.ServerCmd(t.Context(), "drain", b0.ID()))
	drained := waitFor(t, m, 2*time.Minute, "b0 drained", func(st cluster.ClusterStatus) bool {
		polls++
		if st.Server[b0.ID()].State == "draining" {
			sawDraining++
		}
		if st.UnderReplicated != 0 {
			violations = append(violations, itoa(st.UnderReplicated)+" under-replicated ("+serverLines(st)+")")
		}
		return st.Server[b0.ID()].Blocks == 0 && st.UnderReplicated == 0 && st.BytesToMove == 0 && st.Misplaced == 0
	})
	t.Logf("drained after %d polls: %s", polls, serverLines(drained))
	for i, v := range violations {
		if i == 5 {
			break
		}
		t.Errorf("during the drain, status showed %s", v)
	}
	if len(violations) > 0 {
		t.Errorf("under-replicated was not 0 at %d of %d status polls during the drain", len(violations), polls)
	}
	if sawDraining == 0 {
		t.Errorf("status never showed b0 in state draining (last: %q)", drained.Server[b0.ID()].State)
	}
	if n := totalBlocks(drained); n != blocks*r {
		t.Errorf("after the drain the servers hold %d copies, want %d", n, blocks*r)
	}

	// b0's disk empties (deletion may trail the status a little).
	deadline := time.Now().Add(2 * time.Minute) // for a hang only
	for {
		fs, err := b0.BlockFiles()
		must(t, err)
		if len(fs) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("b0 still holds %d block files 2 minutes after status showed it empty", len(fs))
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	rest := m.Servers()[1:]
	for h, n := range copiesOnDisk(t, rest...) {
		if n < r {
			t.Errorf("block %s: %d copies on the servers left after the drain, want %d", h, n, r)
		}
	}
	rd := addMount(t, m)
	must(t, checkStream(filepath.Join(rd.Mount(), "f"), s, nil))
}

// totalBlocks sums the servers' block counts (copies).
func totalBlocks(st cluster.ClusterStatus) int64 {
	var n int64
	for _, s := range st.Server {
		n += s.Blocks
	}
	return n
}

// checkDiskMatchesStatus compares each server's block count in status with
// its block files on disk.
func checkDiskMatchesStatus(t *testing.T, m *cluster.Multi, st cluster.ClusterStatus) {
	t.Helper()
	for _, d := range m.Servers() {
		fs, err := d.BlockFiles()
		must(t, err)
		if got, want := int64(len(fs)), st.Server[d.ID()].Blocks; got != want {
			t.Errorf("%s: %d block files on disk, status says blocks=%d", d.ID(), got, want)
		}
	}
}
