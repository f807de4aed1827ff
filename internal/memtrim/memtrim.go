// Package memtrim gives a daemon's memory back to the system after a
// burst. Go's collector runs when the heap grows, and an idle process does
// not grow: the garbage of a burst (a peer's oversized requests, a large
// listing) stays on the heap until the runtime's forced collection, two
// minutes later, and its pages return to the system slowly after that (the
// issue saw a meta service hold 2.5 GiB for minutes after 40 calls). Run
// looks every Every at how much the heap holds beyond what was live after
// the last collection and, when that excess is more than Floor and either
// more than half the live heap or no collection ran since the last look
// (the process is idle: what was live then may be garbage now), calls
// debug.FreeOSMemory after one more collection (trim): every free page
// given back, the sync.Pools' buffers included.
//
// A quiet process (it allocated less than QuietAlloc since the last look)
// is trimmed at a much smaller excess, QuietFloor: once a daemon's work
// has stopped, collections still come now and then (timers, leases, the
// change feed), so the "no collection" test above rarely holds, while the
// pages the last burst's collections freed stay resident until the
// runtime's scavenger gets to them (part of tessera up's settled memory
// after fsx, bench/results/2026-11-29-memory-8.md). A quiet
// process's trims cost a collection of its small live heap at most once
// per Every, and only after QuietFloor more was freed again.
//
// The rate is bounded: at most one trim per Every, and only after a growth
// of at least Floor, so a daemon whose live heap is large or steadily
// churning pays at most two extra collections per Every. Time is a
// clock.Clock, so tests step it.
//
// GrowthFloor (gcfloor.go) is the other side of the same trade: a daemon
// that runs a low GOGC to bound its peak still lets a small live heap
// grow by a floor between collections, so a metadata phase is not
// collected every few MiB.
package memtrim

import (
	"context"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"time"

	"tessera/internal/clock"
)

// Defaults of Config.
const (
	DefaultEvery      = 10 * time.Second
	DefaultFloor      = 64 << 20
	DefaultQuietFloor = 8 << 20
	DefaultQuietAlloc = 16 << 20
)

// Config tunes Run; zero fields take the defaults.
type Config struct {
	Every time.Duration
	Floor uint64
	// QuietFloor is the excess trimmed in a process that allocated less
	// than QuietAlloc since the last look.
	QuietFloor, QuietAlloc uint64
	Clock                  clock.Clock
	// trim and read stand in for debug.FreeOSMemory and the runtime's
	// metrics in tests.
	trim func()
	read func() Sample
}

// Sample is what the heap holds, in bytes.
type Sample struct {
	Held   uint64 // objects (live and not yet swept), their spans' slack, free pages not given back
	Live   uint64 // live after the last collection
	GCs    uint64 // collections so far
	Allocs uint64 // bytes allocated so far
}

var names = []string{
	"/memory/classes/heap/objects:bytes",
	"/memory/classes/heap/unused:bytes",
	"/memory/classes/heap/free:bytes",
	"/gc/heap/live:bytes",
	"/gc/cycles/total:gc-cycles",
	"/gc/heap/allocs:bytes",
}

// Read samples the runtime's heap (no stop of the world).
func Read() Sample {
	s := make([]metrics.Sample, len(names))
	for i, n := range names {
		s[i].Name = n
	}
	metrics.Read(s)
	v := func(i int) uint64 {
		if s[i].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return s[i].Value.Uint64()
	}
	return Sample{Held: v(0) + v(1) + v(2), Live: v(3), GCs: v(4), Allocs: v(5)}
}

// Due reports whether a heap holding s is worth a trim under floor, prev
// being the sample of the last look.
func Due(s, prev Sample, floor uint64) bool {
	if s.Held <= s.Live {
		return false
	}
	excess := s.Held - s.Live
	return excess > floor && (excess > s.Live/2 || s.GCs == prev.GCs)
}

// QuietDue reports whether a heap holding s is worth a trim in a quiet
// process: it allocated less than quietAlloc since prev, the sample of the
// last look, and holds more than quietFloor beyond its live heap.
func QuietDue(s, prev Sample, quietFloor, quietAlloc uint64) bool {
	if s.Held <= s.Live || s.Allocs < prev.Allocs {
		return false
	}
	return s.Allocs-prev.Allocs < quietAlloc && s.Held-s.Live > quietFloor
}

// Run trims every cfg.Every while due, until ctx is done.
func Run(ctx context.Context, cfg Config) {
	if cfg.Every <= 0 {
		cfg.Every = DefaultEvery
	}
	if cfg.Floor == 0 {
		cfg.Floor = DefaultFloor
	}
	if cfg.QuietFloor == 0 {
		cfg.QuietFloor = DefaultQuietFloor
	}
	if cfg.QuietAlloc == 0 {
		cfg.QuietAlloc = DefaultQuietAlloc
	}
	clk := clock.Or(cfg.Clock)
	if cfg.trim == nil {
		cfg.trim = trim
	}
	if cfg.read == nil {
		cfg.read = Read
	}
	prev := cfg.read()
	t := clk.NewTimer(cfg.Every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		s := cfg.read()
		if Due(s, prev, cfg.Floor) || QuietDue(s, prev, cfg.QuietFloor, cfg.QuietAlloc) {
			cfg.trim()
			s = cfg.read()
		}
		prev = s
		t.Reset(cfg.Every)
	}
}

// trim collects twice, then gives every free page back: the first
// collection moves what sync.Pools hold (gRPC's and TLS's buffers, up to a
// request's 16 MiB) to their victim caches, the second frees them, where
// an idle process would otherwise keep them until its next collection.
func trim() {
	runtime.GC()
	debug.FreeOSMemory()
}
