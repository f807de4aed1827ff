package server

import (
	"log/slog"
	"runtime/debug"
	"sync"

	"tessera/internal/clock"
)

// releaser gives a burst's memory back to the system. Freed buffers stay
// in Go's heap until a collection, which an idle server does not run, and
// the scavenger returns pages slowly even then; after a burst of large PUTs
// (or of peers that only announced them) the server would stay at its peak
// RSS for minutes. Once the bytes in flight have fallen to zero after a
// peak of at least Limits.ReleaseAbove, and stayed there for
// Limits.ReleaseAfter, the releaser empties the buffer pool and calls
// debug.FreeOSMemory (a collection, then every free page returned). A steady stream never reaches zero for that long, so it keeps
// its pool. Measurements: docs/design/2026-11-24-bounded-block-port.md.
//
// Lock order: r.mu before the budget's (release calls idle holding r.mu);
// the budget calls drained after letting its own go.
type releaser struct {
	l     Limits
	clock clock.Clock
	pool  *bufPool
	log   *slog.Logger
	idle  func() bool // reports whether nothing is in flight

	mu     sync.Mutex
	timer  clock.Timer // armed while a release is due; nil otherwise
	closed bool
	// pending: a release found the server busy again; the next drain,
	// however small its peak, re-arms it.
	pending bool
	runs    int // releases done, for tests
}

// drained is the budget's hook: the bytes in flight fell to zero after a
// peak of peak bytes.
func (r *releaser) drained(peak int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || peak < r.l.ReleaseAbove && !r.pending {
		return
	}
	r.pending = false
	if r.timer != nil {
		r.timer.Reset(r.l.ReleaseAfter)
		return
	}
	r.timer = r.clock.AfterFunc(r.l.ReleaseAfter, r.release)
}

func (r *releaser) release() {
	r.mu.Lock()
	r.timer = nil
	if r.closed {
		r.mu.Unlock()
		return
	}
	if !r.idle() {
		// Busy again: the pool is in use; the next drain re-arms.
		r.pending = true
		r.mu.Unlock()
		return
	}
	r.mu.Unlock()
	pooled := r.pool.drain()
	debug.FreeOSMemory()
	r.mu.Lock()
	r.runs++
	r.mu.Unlock()
	r.log.Debug("block server returned memory after a burst", "pooled_bytes", pooled)
}

// released returns the number of releases done.
func (r *releaser) released() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.runs
}

// close stops a pending release.
func (r *releaser) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	if r.timer != nil {
		r.timer.Stop()
		r.timer = nil
	}
}
