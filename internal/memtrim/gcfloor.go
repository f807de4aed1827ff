package memtrim

import (
	"runtime"
	"runtime/debug"
	"sync/atomic"
)

// GrowthFloor keeps the collector's target (GOGC) at percent, except that
// the heap may always grow by at least minGrowth bytes between
// collections: after each collection it sets GOGC to
// max(percent, minGrowth*100/live), live being the heap live after it.
//
// A daemon that bounds its memory with a low GOGC (tessera up's 25: its
// large heap is block buffers) pays for it where its live heap is small:
// a metadata-heavy phase (stat, create of small files) with 20 MiB live
// collected every 5 MiB allocated, and the collector's share of a stat's
// CPU doubled (bench/results/2026-11-29-meta-before-after-3.md). With the
// floor a small heap grows by minGrowth, a large one by percent as before:
// the peak of a large heap does not move, and a small one stays within
// live+minGrowth, below the process's stated bound.
//
// It runs until stop is called. set and live stand in for
// debug.SetGCPercent and the runtime's live-heap metric in tests.
func GrowthFloor(percent int, minGrowth uint64) (stop func()) {
	return growthFloor(percent, minGrowth, func(p int) { debug.SetGCPercent(p) }, func() uint64 { return Read().Live })
}

func growthFloor(percent int, minGrowth uint64, set func(int), live func() uint64) (stop func()) {
	var stopped atomic.Bool
	last := percent
	set(percent)
	var arm func()
	arm = func() {
		// A sentinel's finalizer runs once per collection that finds
		// it unreachable: each run arms the next one. It is larger than
		// the tiny allocator's 16 bytes, so it is freed alone.
		s := new([32]byte)
		runtime.SetFinalizer(s, func(*[32]byte) {
			if stopped.Load() {
				return
			}
			if p := gcPercent(percent, minGrowth, live()); p != last {
				last = p
				set(p)
			}
			arm()
		})
	}
	arm()
	return func() { stopped.Store(true) }
}

// gcPercent is the GOGC that lets a heap of live bytes grow by the larger
// of percent of it and minGrowth, capped at 1000 (a heap of almost nothing
// is not left to grow ten times over by the floor). Changes below a tenth
// are not worth a call: the value is rounded down to a multiple of 5.
func gcPercent(percent int, minGrowth, live uint64) int {
	if live == 0 {
		return percent
	}
	p := int(min(minGrowth*100/live, 1000))
	p -= p % 5
	return max(percent, p)
}
