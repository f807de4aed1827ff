package memtrim

import (
	"runtime"
	"sync"
	"testing"
	"time"
)

// TestGCPercentFloor: a small live heap may grow by the floor, a large one
// by the percent; the floor's target is capped, and a heap of unknown size
// keeps the percent.
func TestGCPercentFloor(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		live uint64
		want int
	}{
		{0, 25},
		{16 * mib, 100},     // 16 MiB floor on 16 MiB live: may double
		{20 * mib, 80},      // 16/20
		{64 * mib, 25},      // 16/64 = the percent
		{200 * mib, 25},     // large: the percent
		{1 * mib, 1000},     // capped
		{48 * mib, 30},      // 33 rounded down to a multiple of 5
		{1 << 40, 25},       // huge
		{15 * mib / 2, 210}, // 213 -> 210
	} {
		if got := gcPercent(25, 16*mib, c.live); got != c.want {
			t.Errorf("gcPercent(25, 16 MiB, %d) = %d, want %d", c.live, got, c.want)
		}
	}
}

// TestGrowthFloorFollowsCollections: after each collection the target is
// set again from the live heap, only when it changes, and not after stop.
func TestGrowthFloorFollowsCollections(t *testing.T) {
	var mu sync.Mutex
	var sets []int
	live := uint64(16 << 20)
	stop := growthFloor(25, 16<<20,
		func(p int) { mu.Lock(); sets = append(sets, p); mu.Unlock() },
		func() uint64 { mu.Lock(); defer mu.Unlock(); return live })
	defer stop()
	got := func() []int {
		mu.Lock()
		defer mu.Unlock()
		return append([]int(nil), sets...)
	}
	waitSets := func(n int) []int {
		t.Helper()
		for range 5000 { // collections until the finalizer has run (bounded: a hang fails)
			runtime.GC()
			time.Sleep(time.Millisecond) // the finalizer goroutine runs
			if s := got(); len(s) >= n {
				return s
			}
		}
		t.Fatalf("target set %v times, want %d", got(), n)
		return nil
	}
	if s := waitSets(2); s[0] != 25 || s[1] != 100 {
		t.Fatalf("targets %v, want [25 100]: the percent, then the floor's for 16 MiB live", s)
	}
	mu.Lock()
	live = 200 << 20
	mu.Unlock()
	if s := waitSets(3); s[2] != 25 {
		t.Fatalf("targets %v, want 25 once the live heap is large", s)
	}
	for range 5 {
		runtime.GC()
	}
	if s := got(); len(s) != 3 {
		t.Fatalf("targets %v: set again with no change", s)
	}
	stop()
	mu.Lock()
	live = 16 << 20
	mu.Unlock()
	for range 5 {
		runtime.GC()
	}
	if s := got(); len(s) != 3 {
		t.Fatalf("targets %v: set after stop", s)
	}
}
