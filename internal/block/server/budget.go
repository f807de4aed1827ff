package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"tessera/internal/clock"
)

// errBusy is the class of a request refused because its bytes did not fit
// in the in-flight budget within Limits.BudgetWait.
var errBusy = errors.New("server busy")

// budget is the in-flight byte budget: a request reserves its body's
// declared length, in all and for its peer, before anything is allocated
// for it, and gives it back once its buffer is no longer used. A request
// that does not fit waits, holding nothing, until it does or the wait is
// over.
type budget struct {
	total, perPeer int64
	wait           time.Duration
	clock          clock.Clock
	// drained is called (without the lock) when the bytes in flight fall
	// to zero, with the most that were in flight since the last time.
	drained func(peak int64)

	mu      sync.Mutex
	used    int64
	peak    int64
	peers   map[string]int64
	changed chan struct{} // closed and replaced at every release
}

func newBudget(l Limits, clk clock.Clock, drained func(peak int64)) *budget {
	return &budget{
		total: l.MaxInFlight, perPeer: l.MaxInFlightPerIP, wait: l.BudgetWait,
		clock: clock.Or(clk), drained: drained,
		peers: make(map[string]int64), changed: make(chan struct{}),
	}
}

// peerOf is the budget's key for a request's remote address: its IP.
func peerOf(remoteAddr string) string {
	if host, _, err := net.SplitHostPort(remoteAddr); err == nil {
		return host
	}
	return remoteAddr
}

// acquire reserves n bytes for peer. The returned function gives them back
// (once). It fails with errBusy when they do not fit within b.wait, or
// with ctx's error.
func (b *budget) acquire(ctx context.Context, peer string, n int64) (release func(), err error) {
	if n > b.perPeer {
		return nil, fmt.Errorf("%w: a request of %d bytes exceeds the in-flight limit of %d bytes per peer", errBusy, n, b.perPeer)
	}
	var timer clock.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		b.mu.Lock()
		if release := b.takeLocked(peer, n); release != nil {
			b.mu.Unlock()
			return release, nil
		}
		changed, mine, all := b.changed, b.peers[peer], b.used
		b.mu.Unlock()
		if timer == nil {
			timer = b.clock.NewTimer(b.wait)
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-timer.C():
			return nil, fmt.Errorf("%w: %d more bytes did not fit in %v: %d in flight from %s (limit %d), %d in all (limit %d)",
				errBusy, n, b.wait, mine, peer, b.perPeer, all, b.total)
		}
	}
}

// tryAcquire is acquire without waiting: nil when n bytes do not fit now.
func (b *budget) tryAcquire(peer string, n int64) (release func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.takeLocked(peer, n)
}

// takeLocked reserves n bytes for peer if they fit, returning the function
// that gives them back (once); nil if they do not fit.
func (b *budget) takeLocked(peer string, n int64) (release func()) {
	if n > b.perPeer || b.used+n > b.total || b.peers[peer]+n > b.perPeer {
		return nil
	}
	b.used += n
	b.peak = max(b.peak, b.used)
	b.peers[peer] += n
	var once sync.Once
	return func() { once.Do(func() { b.release(peer, n) }) }
}

func (b *budget) release(peer string, n int64) {
	b.mu.Lock()
	b.used -= n
	if b.peers[peer] -= n; b.peers[peer] <= 0 {
		delete(b.peers, peer)
	}
	close(b.changed)
	b.changed = make(chan struct{})
	var peak int64 = -1
	if b.used == 0 {
		peak, b.peak = b.peak, 0
	}
	b.mu.Unlock()
	if peak >= 0 && b.drained != nil {
		b.drained(peak)
	}
}

// inFlight returns the bytes reserved now.
func (b *budget) inFlight() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}
