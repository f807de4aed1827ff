package meta

import (
	"errors"
	"fmt"
	"testing"

	"tessera/internal/kv/faultkv"
	"tessera/internal/kv/memkv"
)

// TestFinishDropsViewRerun: FinishDrops' listing View, cut short part
// way through its scan and run again (as etcdkv does when the snapshot is
// compacted away), still finds every pending drop: the rerun starts the
// page again where the call's page began, not where the cut run stopped.
// Each seed cuts the run at another read.
func TestFinishDropsViewRerun(t *testing.T) {
	reruns := 0
	for seed := range uint64(8) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { reruns += finishDropsRerun(t, seed) })
	}
	if reruns == 0 {
		t.Fatal("no View was run again")
	}
}

// finishDropsRerun returns how many Views ran again.
func finishDropsRerun(t *testing.T, seed uint64) int {
	store := faultkv.New(memkv.New(), faultkv.Options{Seed: seed, Rerun: 1})
	store.Pause(true)
	e := newSegEnv(t, store, segBound)
	crash := errors.New("crash")
	const files = 6
	for i := range files {
		f := e.fill(fmt.Sprint("f", i), fmt.Sprint("f", i), 300)
		e.svc.segmentFault = func(string, Ino) error { return crash }
		if _, err := e.svc.SetAttr(e.ctx, f.Ino, SetAttrReq{Valid: SetSize, Size: 5 * 4096}); !errors.Is(err, crash) {
			t.Fatalf("truncate: %v; want the injected crash", err)
		}
		e.svc.segmentFault = nil
	}
	if n := e.pendingDrops(); n != files {
		t.Fatalf("%d pending drops, want %d", n, files)
	}
	e.restart()
	store.Pause(false)
	n, err := e.svc.FinishDrops(e.ctx)
	store.Pause(true)
	if err != nil || n != files {
		t.Fatalf("FinishDrops = %d, %v; want %d", n, err, files)
	}
	if n := e.pendingDrops(); n != 0 {
		t.Fatalf("%d pending drops left", n)
	}
	return store.Stats().Reruns
}
