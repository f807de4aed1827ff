package gateway

import (
	"testing"

	"tessera/internal/meta"
)

// TestTrimDropsBlocksRecordedMeanwhile: a piece claimed over blocks that
// another fetch recorded just before the claim keeps only the blocks still
// missing (the others are neither fetched again nor left busy), and a
// piece whose blocks are all held ends at once without an error.
func TestTrimDropsBlocksRecordedMeanwhile(t *testing.T) {
	var f flights
	const ino = meta.Ino(7)
	mine, theirs := f.claim(ino, []meta.BlockRange{{First: 0, End: 8}}, 4)
	if len(mine) != 2 || len(theirs) != 0 {
		t.Fatalf("claim: %d mine, %d theirs; want 2 pieces of 4", len(mine), len(theirs))
	}
	held := func(b uint64) bool { return b < 2 || b >= 4 } // 0-1 and 4-7 recorded meanwhile
	if !f.trim(ino, mine[0], held) {
		t.Fatal("piece [0,4) with 2-3 missing: trim says nothing is left")
	}
	if mine[0].first != 2 || mine[0].end != 4 {
		t.Errorf("piece trimmed to [%d,%d), want [2,4)", mine[0].first, mine[0].end)
	}
	if f.trim(ino, mine[1], held) {
		t.Fatalf("piece [4,8) all held: trim says blocks are left ([%d,%d))", mine[1].first, mine[1].end)
	}
	select {
	case <-mine[1].done:
		if mine[1].err != nil {
			t.Errorf("a piece all held ended with %v", mine[1].err)
		}
	default:
		t.Error("a piece all held was not ended: its waiters would wait for ever")
	}
	// Blocks trimmed away are free to claim; those still fetched are not.
	if got := f.free(ino, []meta.BlockRange{{First: 0, End: 8}}); len(got) != 2 || got[0] != (meta.BlockRange{First: 0, End: 2}) || got[1] != (meta.BlockRange{First: 4, End: 8}) {
		t.Errorf("free after trim: %v, want [0,2) and [4,8)", got)
	}
	f.finish(ino, mine[0], nil)
	if len(f.m) != 0 {
		t.Errorf("flights left after every piece ended: %v", f.m)
	}
}
