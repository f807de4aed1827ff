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
// The rate is bounded: at most one trim per Every, and only after a growth
// of at least Floor, so a daemon whose live heap is large or steadily
// churning pays at most two extra collections per Every. Time is a
// clock.Clock, so tests step it.
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
	DefaultEvery = 10 * time.Second
	DefaultFloor = 64 << 20
)

// Config tunes Run; zero fields take the defaults.
type Config struct {
	Every time.Duration
	Floor uint64
	Clock clock.Clock
	// trim and read stand in for debug.FreeOSMemory and the runtime's
	// metrics in tests.
	trim func()
	read func() Sample
}

// Sample is what the heap holds, in bytes.
type Sample struct {
	Held uint64 // objects (live and not yet swept), their spans' slack, free pages not given back
	Live uint64 // live after the last collection
	GCs  uint64 // collections so far
}

var names = []string{
	"/memory/classes/heap/objects:bytes",
	"/memory/classes/heap/unused:bytes",
	"/memory/classes/heap/free:bytes",
	"/gc/heap/live:bytes",
	"/gc/cycles/total:gc-cycles",
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
	return Sample{Held: v(0) + v(1) + v(2), Live: v(3), GCs: v(4)}
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

// Run trims every cfg.Every while due, until ctx is done.
func Run(ctx context.Context, cfg Config) {
	if cfg.Every <= 0 {
		cfg.Every = DefaultEvery
	}
	if cfg.Floor == 0 {
		cfg.Floor = DefaultFloor
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
		if Due(s, prev, cfg.Floor) {
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
