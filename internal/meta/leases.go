package meta

import (
	"container/list"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"
)

// recentChanges is how many of the latest changed inodes a leaseTable
// remembers, to catch a change that slips between a read and its grant.
const recentChanges = 1024

// session is one client session's soft state.
type session struct {
	id       SessionID
	deadline time.Time // expires when the clock passes it
	seq      uint64    // latest Seq queued
	acked    uint64    // latest Seq acknowledged
	pending  []Callback
	// wake is closed (and replaced) when a callback is queued; acks when
	// acked advances. Both are closed for good when the session ends.
	wake, acks chan struct{}
	ended      bool
	leases     map[Ino]*list.Element // values of order
	order      *list.List            // of Ino, oldest grant first
	// leasesPeak is the most leases held since leases was last made
	// anew: a Go map keeps its size after deletes, so one that fell to a
	// quarter of it is copied (dropLeaseLocked).
	leasesPeak int
	// opens counts the session's opens of each inode it has open
	// (opens.go).
	opens map[Ino]int
}

// ackWait is one callback a Sync change waits for.
type ackWait struct {
	s   *session
	seq uint64
}

// leaseTable tracks sessions, their leases and their callback queues, in
// memory only (DESIGN §2.4). It is safe for concurrent use.
type leaseTable struct {
	now       func() time.Time
	after     func(time.Duration) <-chan time.Time
	ttl       time.Duration
	maxLeases int
	// graceUntil: no orphan is deleted before it (opens.go).
	graceUntil time.Time
	// kick wakes the reaper when a session that held an orphan open ends.
	kick chan struct{}
	// shared: the store is shared with other Services, which call back
	// only the inodes this one recorded (remotecb.go).
	shared bool

	mu struct {
		sync.Mutex
		sessions map[SessionID]*session
		// holders are the sessions holding a lease on each inode: a
		// slice, mostly of one, where a map per inode cost ~200 bytes a
		// lease (580 bytes a file with the rest, to a million files).
		holders     map[Ino][]*session
		holdersPeak int    // as session.leasesPeak
		gen         uint64 // counts changes called back
		queued      uint64 // counts callbacks queued (LeaseStats)
		recent      [recentChanges]recentChange
		nextSweep   time.Time
		// changing holds the inodes a Sync change is under way on; the
		// channel is closed when it ends (see begin).
		changing map[Ino]chan struct{}
		// openers are the sessions that have each inode open; reaping
		// holds the inodes a reap is under way on (closed when it ends);
		// orphans are the orphans this service knows to be held open,
		// reaped at their last release (opens.go).
		openers map[Ino]map[SessionID]*session
		reaping map[Ino]chan struct{}
		orphans map[Ino]struct{}
		// recorded mirrors this Service's lease records in a shared
		// store: no lease is granted on an inode not in it. The value
		// says a tidying round found the record unheld and unused since
		// the round before (unheldRecorded): only such a record is
		// dropped, so a read between its record check and its grant
		// never loses the record to a round running in between.
		recorded map[Ino]bool
	}
}

// recentChange records that ino changed at generation gen.
type recentChange struct {
	ino Ino
	gen uint64
}

func newLeaseTable(opts Options, now func() time.Time) *leaseTable {
	l := &leaseTable{now: now, after: opts.After, ttl: opts.SessionTTL, maxLeases: opts.MaxLeases}
	if l.after == nil {
		l.after = time.After
	}
	if l.ttl <= 0 {
		l.ttl = DefaultSessionTTL
	}
	if l.maxLeases <= 0 {
		l.maxLeases = DefaultMaxLeases
	}
	l.mu.sessions = make(map[SessionID]*session)
	l.mu.holders = make(map[Ino][]*session)
	l.mu.changing = make(map[Ino]chan struct{})
	l.mu.openers = make(map[Ino]map[SessionID]*session)
	l.mu.reaping = make(map[Ino]chan struct{})
	l.mu.orphans = make(map[Ino]struct{})
	l.mu.recorded = make(map[Ino]bool)
	l.kick = make(chan struct{}, 1)
	return l
}

// open starts a session. Ids are random so that a restarted service does not
// hand a new client the id an old one still uses.
func (l *leaseTable) open() SessionInfo {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sweepLocked()
	id := SessionID(rand.Uint64())
	for id == 0 || l.mu.sessions[id] != nil {
		id = SessionID(rand.Uint64())
	}
	l.mu.sessions[id] = &session{id: id, deadline: l.now().Add(l.ttl),
		wake: make(chan struct{}), acks: make(chan struct{}),
		leases: make(map[Ino]*list.Element), order: list.New()}
	return SessionInfo{ID: id, TTL: l.ttl}
}

// close ends session id, if it exists.
func (l *leaseTable) close(id SessionID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s := l.mu.sessions[id]; s != nil {
		l.endLocked(s)
	}
}

// liveLocked returns session id, or nil when it is unknown or expired (an
// expired one is ended now).
func (l *leaseTable) liveLocked(id SessionID) *session {
	s := l.mu.sessions[id]
	if s != nil && l.now().After(s.deadline) {
		l.endLocked(s)
		return nil
	}
	return s
}

// endAll ends every session and forgets every lease record (shared.go:
// the Service's liveness lapsed).
func (l *leaseTable) endAll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.mu.sessions {
		l.endLocked(s)
	}
	clear(l.mu.recorded)
}

// invalidateEverything ends every lease with an invalidation and forgets
// every lease record (shared.go: the Service's liveness had expired, so
// changes may have skipped it and its records may be gone).
func (l *leaseTable) invalidateEverything() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.mu.sessions {
		for ino := range s.leases {
			l.queueLocked(s, Callback{Ino: ino, Kind: CallbackInvalidate})
			l.dropLeaseLocked(s, ino)
		}
	}
	for ino := range l.mu.recorded {
		l.changedLocked(ino)
	}
	clear(l.mu.recorded)
}

// endLocked drops s, its leases and its queue, and wakes its waiters.
func (l *leaseTable) endLocked(s *session) {
	if s.ended {
		return
	}
	s.ended = true
	delete(l.mu.sessions, s.id)
	for ino := range s.leases {
		l.unholdLocked(ino, s.id)
	}
	l.endOpensLocked(s)
	s.leases, s.order, s.pending = nil, nil, nil
	close(s.wake)
	close(s.acks)
}

func (l *leaseTable) unholdLocked(ino Ino, id SessionID) {
	hs := l.mu.holders[ino]
	for i, s := range hs {
		if s.id == id {
			hs[i] = hs[len(hs)-1]
			hs[len(hs)-1] = nil
			hs = hs[:len(hs)-1]
			break
		}
	}
	if len(hs) > 0 {
		l.mu.holders[ino] = hs
		return
	}
	delete(l.mu.holders, ino)
	if n := len(l.mu.holders); l.mu.holdersPeak >= minShrink && n < l.mu.holdersPeak/4 {
		l.mu.holders = resized(l.mu.holders)
		l.mu.holdersPeak = n
	}
}

// minShrink is the smallest peak of a lease map worth copying smaller.
const minShrink = 4096

// resized returns a copy of m sized for its entries (maps.Clone keeps the
// original's size).
func resized[K comparable, V any](m map[K]V) map[K]V {
	out := make(map[K]V, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// sweepLocked ends expired sessions, at most twice per TTL, so that clients
// that vanished do not keep memory.
func (l *leaseTable) sweepLocked() {
	now := l.now()
	if now.Before(l.mu.nextSweep) {
		return
	}
	l.mu.nextSweep = now.Add(l.ttl / 2)
	for _, s := range l.mu.sessions {
		if now.After(s.deadline) {
			l.endLocked(s)
		}
	}
}

// generation returns a mark to pass to grant: changes called back after it
// are caught by the grant.
func (l *leaseTable) generation() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.gen
}

// grant gives session id a lease on ino, read at generation since. When ino
// was changed (and called back) after since, the caller may hold stale data
// that no callback will correct, so the session gets an invalidation now
// and grant reports false, granting nothing. It reports false too while a
// Sync change of ino is under way. Either way a caller that must not return
// stale state (leasedRead) waits for the change (await) and reads again:
// the invalidation is sent, but nobody waits for it, and the change may
// have returned already, so a reply read before it would otherwise be
// served from the client's cache after the change returned.
func (l *leaseTable) grant(id SessionID, ino Ino, since uint64) bool {
	if id == 0 || ino == 0 {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, busy := l.mu.changing[ino]; busy {
		return false
	}
	return l.grantLocked(id, ino, since)
}

// await returns once no Sync change of ino is under way.
func (l *leaseTable) await(ctx context.Context, ino Ino) error {
	l.mu.Lock()
	gate, busy := l.mu.changing[ino]
	l.mu.Unlock()
	if !busy {
		return nil
	}
	select {
	case <-gate:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("inode %d: waiting for a change to end: %w (%w)", ino, ctx.Err(), ErrIO)
	}
}

// begin starts a Sync change of ino by session from, before the change is
// made: it waits for any other Sync change of ino to end, ends every other
// session's lease on ino with an invalidation, and waits until each was
// acknowledged or its session expired. Until end is called, reads that would
// grant a lease on ino wait (grant reports false). So when the change is
// made, no client caches ino any more and none can cache it again before the
// change is visible: a read anywhere that starts after the change returned
// sees it (linearizable, as the posix policy promises). Invalidating before
// the change, not after, is what closes the window in which one client could
// read the new state from the store while another still served the old one
// from its cache.
func (l *leaseTable) begin(ctx context.Context, ino Ino, from SessionID) (end func(), err error) {
	for {
		if err := l.await(ctx, ino); err != nil {
			return nil, err
		}
		l.mu.Lock()
		if _, busy := l.mu.changing[ino]; !busy {
			break
		}
		l.mu.Unlock()
	}
	gate := make(chan struct{})
	l.mu.changing[ino] = gate
	now := l.now()
	var waits []ackWait
	for _, s := range slices.Clone(l.mu.holders[ino]) {
		switch {
		case s.id == from:
		case now.After(s.deadline):
			l.endLocked(s)
		default:
			waits = append(waits, ackWait{s, l.queueLocked(s, Callback{Ino: ino, Kind: CallbackInvalidate})})
			l.dropLeaseLocked(s, ino)
		}
	}
	l.mu.Unlock()
	end = func() {
		l.mu.Lock()
		delete(l.mu.changing, ino)
		l.mu.Unlock()
		close(gate)
	}
	if err := l.wait(ctx, waits); err != nil {
		end()
		return nil, err
	}
	return end, nil
}

// grantLocked is grant; it reports false when ino changed after since
// (the session got an invalidation instead of a lease).
func (l *leaseTable) grantLocked(id SessionID, ino Ino, since uint64) bool {
	s := l.liveLocked(id)
	if s == nil {
		return true
	}
	_, recorded := l.mu.recorded[ino]
	if l.changedSinceLocked(ino, since) || (l.shared && !recorded) {
		l.queueLocked(s, Callback{Ino: ino, Kind: CallbackInvalidate})
		l.dropLeaseLocked(s, ino)
		return false
	}
	if recorded {
		l.mu.recorded[ino] = false
	}
	if e, ok := s.leases[ino]; ok {
		s.order.MoveToBack(e)
		return true
	}
	s.leases[ino] = s.order.PushBack(ino)
	s.leasesPeak = max(s.leasesPeak, len(s.leases))
	l.mu.holders[ino] = append(l.mu.holders[ino], s)
	l.mu.holdersPeak = max(l.mu.holdersPeak, len(l.mu.holders))
	for len(s.leases) > l.maxLeases {
		old := s.order.Front().Value.(Ino)
		l.dropLeaseLocked(s, old)
		l.queueLocked(s, Callback{Ino: old, Kind: CallbackInvalidate})
	}
	return true
}

// changedLocked records that ino changed (or was recorded): grants read
// before it fail.
func (l *leaseTable) changedLocked(ino Ino) {
	l.mu.gen++
	l.mu.recent[l.mu.gen%recentChanges] = recentChange{ino: ino, gen: l.mu.gen}
}

// isRecorded reports whether this Service's lease record of ino is in the
// store.
func (l *leaseTable) isRecorded(ino Ino) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.mu.recorded[ino]
	if ok {
		l.mu.recorded[ino] = false // in use: the next round keeps it
	}
	return ok
}

// record notes that the lease record of ino was written. It counts as a
// change of ino: a read that began before the record existed may have
// missed a change no callback will tell of, so its grant fails.
func (l *leaseTable) record(ino Ino) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.mu.recorded[ino] = false
	l.changedLocked(ino)
}

// recordNew notes the lease record of an inode written by the
// transaction that created it: not a change (see Service.notedNew).
func (l *leaseTable) recordNew(ino Ino) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.mu.recorded[ino] = false
}

// unrecordIfUnheld forgets the lease record of ino when no session holds a
// lease on it and nothing used it since unheldRecorded returned it, and
// reports whether it did (the caller deletes the record; until then, and
// after, no lease on ino is granted without a new one).
func (l *leaseTable) unrecordIfUnheld(ino Ino) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if idle := l.mu.recorded[ino]; len(l.mu.holders[ino]) > 0 || !idle {
		return false
	}
	delete(l.mu.recorded, ino)
	return true
}

// unheldRecorded returns up to n recorded inodes on which no session
// holds a lease and that nothing used since the previous call (a round of
// tidyLeases) found them so; the unheld ones it finds in use it marks, for
// the next round. A record is thus dropped only after a whole round
// unheld and unused: a read that found the record (ensureLease) and has
// not been granted yet is not robbed of it, which would turn its lease
// into a needless invalidation.
func (l *leaseTable) unheldRecorded(n int) []Ino {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Ino
	for ino, idle := range l.mu.recorded {
		if len(out) == n {
			break
		}
		switch {
		case len(l.mu.holders[ino]) > 0:
		case idle:
			out = append(out, ino)
		default:
			l.mu.recorded[ino] = true
		}
	}
	return out
}

// invalidateAll calls a change of ino made through another Service back to
// every session holding a lease on it, as an invalidation, and returns
// what to wait for.
func (l *leaseTable) invalidateAll(ino Ino) []ackWait {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sweepLocked()
	l.changedLocked(ino)
	var waits []ackWait
	now := l.now()
	for _, s := range slices.Clone(l.mu.holders[ino]) {
		if now.After(s.deadline) {
			l.endLocked(s)
			continue
		}
		waits = append(waits, ackWait{s, l.queueLocked(s, Callback{Ino: ino, Kind: CallbackInvalidate})})
		l.dropLeaseLocked(s, ino)
	}
	return waits
}

// gone ends the leases on ino, which lost its last name (an unlinked
// file, a removed directory), of the sessions that do not hold it open:
// nothing can reach it any more but their open handles. The other holders
// get an invalidation, the session that removed it (from) none. Without
// it the leases on removed inodes stayed until each session's MaxLeases
// pushed them out.
func (l *leaseTable) gone(from SessionID, ino Ino) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.changedLocked(ino)
	for _, s := range slices.Clone(l.mu.holders[ino]) {
		if _, open := l.mu.openers[ino][s.id]; open {
			continue
		}
		if s.id != from {
			l.queueLocked(s, Callback{Ino: ino, Kind: CallbackInvalidate})
		}
		l.dropLeaseLocked(s, ino)
	}
}

// changedSinceLocked reports whether ino may have changed after since.
func (l *leaseTable) changedSinceLocked(ino Ino, since uint64) bool {
	if l.mu.gen == since {
		return false
	}
	if l.mu.gen-since > recentChanges {
		return true // the record of what changed does not reach back so far
	}
	for g := since + 1; g <= l.mu.gen; g++ {
		if r := l.mu.recent[g%recentChanges]; r.gen == g && r.ino == ino {
			return true
		}
	}
	return false
}

func (l *leaseTable) dropLeaseLocked(s *session, ino Ino) {
	if e, ok := s.leases[ino]; ok {
		s.order.Remove(e)
		delete(s.leases, ino)
		l.unholdLocked(ino, s.id)
		if n := len(s.leases); s.leasesPeak >= minShrink && n < s.leasesPeak/4 {
			s.leases = resized(s.leases)
			s.leasesPeak = n
		}
	}
}
