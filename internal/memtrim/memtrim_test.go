package memtrim

import (
	"context"
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"testing"
	"time"

	"tessera/internal/clock"
)

func TestDue(t *testing.T) {
	const floor = 64 << 20
	for _, tc := range []struct {
		s    Sample
		idle bool // no collection since the last look
		want bool
	}{
		{Sample{Held: 50 << 20, Live: 40 << 20}, true, false},   // small
		{Sample{Held: 3 << 30, Live: 50 << 20}, false, true},    // after a burst
		{Sample{Held: 1400 << 20, Live: 1 << 30}, false, false}, // a large live heap's normal slack
		{Sample{Held: 1700 << 20, Live: 1 << 30}, false, true},  // beyond half of it
		{Sample{Held: 1400 << 20, Live: 1 << 30}, true, true},   // idle: what was live may be garbage
		{Sample{Held: 1050 << 20, Live: 1 << 30}, true, false},  // idle, but within the floor
		{Sample{Held: 40 << 20, Live: 60 << 20}, true, false},   // live counted before a sweep
	} {
		prev := Sample{GCs: 7}
		s := tc.s
		s.GCs = 8
		if tc.idle {
			s.GCs = 7
		}
		if got := Due(s, prev, floor); got != tc.want {
			t.Errorf("Due(%+v, idle %v) = %v, want %v", tc.s, tc.idle, got, tc.want)
		}
	}
}

// TestRunTrimsOncePerIntervalWhileDue: with a fake clock, a trim happens
// at a tick only while the heap holds too much, never between ticks.
func TestRunTrimsOncePerIntervalWhileDue(t *testing.T) {
	clk := clock.NewFake(time.Unix(0, 0))
	var held atomic.Uint64
	held.Store(3 << 30)
	var trims atomic.Int32
	trimmed := make(chan struct{}, 10)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		Run(ctx, Config{Every: time.Second, Clock: clk, QuietFloor: 1 << 40, // the burst rule alone
			read: func() Sample { return Sample{Held: held.Load(), Live: 50 << 20, GCs: uint64(trims.Load())} },
			trim: func() { trims.Add(1); held.Store(60 << 20); trimmed <- struct{}{} }})
	}()
	for clk.Pending() == 0 {
		runtime.Gosched()
	}
	clk.Advance(time.Second)
	<-trimmed
	for range 5 { // not due any more: no trim
		for clk.Pending() == 0 {
			runtime.Gosched()
		}
		clk.Advance(time.Second)
	}
	held.Store(2 << 30)
	for clk.Pending() == 0 {
		runtime.Gosched()
	}
	clk.Advance(time.Second)
	<-trimmed
	cancel()
	<-done
	if n := trims.Load(); n != 2 {
		t.Errorf("%d trims, want 2", n)
	}
}

var sink [][]byte

// TestTrimGivesBurstBack: the real runtime after a 256 MiB burst of
// garbage holds it until a trim, which gives it back.
func TestTrimGivesBurstBack(t *testing.T) {
	runtime.GC()
	// The collector off, a burst of garbage after the last collection: as
	// an idle daemon's heap is once the burst has passed.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	for range 256 {
		b := make([]byte, 1<<20)
		b[0] = 1
		sink = append(sink, b)
	}
	sink = nil
	before := Read()
	if !Due(before, Sample{}, DefaultFloor) {
		t.Fatalf("after a 256 MiB burst the heap holds %+v: not due", before)
	}
	clk := clock.NewFake(time.Unix(0, 0))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); Run(ctx, Config{Clock: clk}) }()
	for clk.Pending() == 0 {
		runtime.Gosched()
	}
	clk.Advance(DefaultEvery)
	for clk.Pending() == 0 { // the tick's trim is done once the timer is armed again
		runtime.Gosched()
	}
	cancel()
	<-done
	after := Read()
	if after.Held > before.Held-200<<20 {
		t.Errorf("heap held %d MiB before the trim, %d MiB after (live %d MiB)", before.Held>>20, after.Held>>20, after.Live>>20)
	}
}

func TestQuietDue(t *testing.T) {
	const floor, alloc = 8 << 20, 16 << 20
	prev := Sample{Allocs: 1 << 30}
	for _, tc := range []struct {
		s    Sample
		want bool
	}{
		{Sample{Held: 40 << 20, Live: 20 << 20, Allocs: prev.Allocs + 1<<20}, true},   // quiet, 20 MiB freed not given back
		{Sample{Held: 26 << 20, Live: 20 << 20, Allocs: prev.Allocs + 1<<20}, false},  // quiet, within the floor
		{Sample{Held: 40 << 20, Live: 20 << 20, Allocs: prev.Allocs + 64<<20}, false}, // busy: the burst rule's business
		{Sample{Held: 10 << 20, Live: 20 << 20, Allocs: prev.Allocs}, false},          // live counted before a sweep
	} {
		if got := QuietDue(tc.s, prev, floor, alloc); got != tc.want {
			t.Errorf("QuietDue(%+v) = %v, want %v", tc.s, got, tc.want)
		}
	}
}

// TestRunTrimsQuietProcess: a process that stopped working, whose
// collections still run now and then (so the burst rule's "no collection
// since the last look" never holds) and whose excess is under the burst
// floor, is trimmed at the next look once it holds more than QuietFloor
// beyond its live heap; while it works it is not.
func TestRunTrimsQuietProcess(t *testing.T) {
	clk := clock.NewFake(time.Unix(0, 0))
	var held, allocs, gcs atomic.Uint64
	held.Store(50 << 20) // 30 MiB beyond the live heap: under DefaultFloor
	var trims atomic.Int32
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		Run(ctx, Config{Every: time.Second, Clock: clk,
			read: func() Sample {
				return Sample{Held: held.Load(), Live: 20 << 20, GCs: gcs.Load(), Allocs: allocs.Load()}
			},
			trim: func() { trims.Add(1); held.Store(21 << 20) }})
	}()
	tick := func() {
		for clk.Pending() == 0 {
			runtime.Gosched()
		}
		clk.Advance(time.Second)
		for clk.Pending() == 0 { // the look is done once the timer is armed again
			runtime.Gosched()
		}
	}
	for clk.Pending() == 0 { // the first sample is taken
		runtime.Gosched()
	}
	for range 3 { // working: 100 MiB allocated and a collection per look
		allocs.Add(100 << 20)
		gcs.Add(1)
		tick()
	}
	if n := trims.Load(); n != 0 {
		t.Fatalf("%d trims while the process worked, want 0", n)
	}
	allocs.Add(1 << 20) // quiet now, though a collection still ran
	gcs.Add(1)
	tick()
	if n := trims.Load(); n != 1 {
		t.Fatalf("%d trims at the first quiet look, want 1", n)
	}
	for range 3 { // given back: nothing more to trim
		gcs.Add(1)
		tick()
	}
	cancel()
	<-done
	if n := trims.Load(); n != 1 {
		t.Errorf("%d trims, want 1", n)
	}
}
