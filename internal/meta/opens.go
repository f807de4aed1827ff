package meta

import (
	"context"
	"fmt"
	"time"
)

// This file keeps the open registrations of the sessions (which inodes each
// session has open, counted per open) and decides when an orphan may be
// deleted: only when no live session has it open, it is not being reaped
// already, and the service is past its restart grace. See the package
// comment, Open files.

// DefaultOrphanGrace is Options.OrphanGrace when it and SessionTTL are 0:
// how long a restarted service leaves orphans alone, so that the clients of
// its previous life, whose sessions it does not know, can open new sessions
// and re-announce the inodes they hold open. It is twice the session TTL: a
// client learns of the restart at its next poll, within a TTL.
const DefaultOrphanGrace = 2 * DefaultSessionTTL

// holdLocked counts one more open of ino by session id; it reports false
// (holding nothing) when the session is unknown or expired.
func (l *leaseTable) holdLocked(id SessionID, ino Ino) bool {
	s := l.liveLocked(id)
	if s == nil {
		return false
	}
	if s.opens == nil {
		s.opens = make(map[Ino]int)
	}
	s.opens[ino]++
	hs := l.mu.openers[ino]
	if hs == nil {
		hs = make(map[SessionID]*session)
		l.mu.openers[ino] = hs
	}
	hs[id] = s
	return true
}

// hold counts one more open of ino by session id, after waiting for a reap
// of ino under way to end (the caller then reads the inode and finds it
// gone). Session 0, or an unknown or expired session, holds nothing: the
// client re-announces what it holds when it opens its next session.
func (l *leaseTable) hold(ctx context.Context, id SessionID, ino Ino) (bool, error) {
	if id == 0 {
		return false, nil
	}
	for {
		l.mu.Lock()
		gate, busy := l.mu.reaping[ino]
		if !busy {
			ok := l.holdLocked(id, ino)
			l.mu.Unlock()
			return ok, nil
		}
		l.mu.Unlock()
		select {
		case <-gate:
		case <-ctx.Done():
			return false, fmt.Errorf("inode %d: waiting for a reap to end: %w (%w)", ino, ctx.Err(), ErrIO)
		}
	}
}

// unhold drops one open of ino by session id (nothing when it holds none)
// and reports whether ino is now an orphan this service knows of that no
// session holds open, to be reaped.
func (l *leaseTable) unhold(id SessionID, ino Ino) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s := l.mu.sessions[id]; s != nil && s.opens[ino] > 0 {
		s.opens[ino]--
		if s.opens[ino] == 0 {
			delete(s.opens, ino)
			l.dropOpenerLocked(ino, id)
		}
	}
	_, orphan := l.mu.orphans[ino]
	return orphan && len(l.mu.openers[ino]) == 0
}

func (l *leaseTable) dropOpenerLocked(ino Ino, id SessionID) {
	if hs := l.mu.openers[ino]; hs != nil {
		delete(hs, id)
		if len(hs) == 0 {
			delete(l.mu.openers, ino)
		}
	}
}

// endOpensLocked drops the open registrations of s, which ends; when that
// leaves an orphan unheld, the reaper is woken.
func (l *leaseTable) endOpensLocked(s *session) {
	kick := false
	for ino := range s.opens {
		l.dropOpenerLocked(ino, s.id)
		if _, orphan := l.mu.orphans[ino]; orphan && len(l.mu.openers[ino]) == 0 {
			kick = true
		}
	}
	s.opens = nil
	if kick {
		select {
		case l.kick <- struct{}{}:
		default:
		}
	}
}

// orphaned records that ino is an orphan held open (or that may be): its
// last release reaps it.
func (l *leaseTable) orphaned(ino Ino) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.mu.orphans[ino] = struct{}{}
}

// startReap claims ino for deletion: it reports false when the service is
// in its restart grace, a live session has ino open, or another reap of it
// is under way. Until endReap, hold waits, so an open racing with the
// deletion either is seen here or reads the inode after it is gone.
func (l *leaseTable) startReap(ino Ino) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if now.Before(l.graceUntil) {
		return false
	}
	if _, busy := l.mu.reaping[ino]; busy {
		return false
	}
	for _, s := range l.mu.openers[ino] {
		if !now.After(s.deadline) {
			return false
		}
		l.endLocked(s)
	}
	l.mu.reaping[ino] = make(chan struct{})
	return true
}

// reapUnderWay returns the gate of a reap of ino under way (closed when it
// ends), nil when there is none.
func (l *leaseTable) reapUnderWay(ino Ino) chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.reaping[ino]
}

// endReap ends a reap startReap claimed; gone says the inode is no orphan
// (any more): deleted, or linked.
func (l *leaseTable) endReap(ino Ino, gone bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if gate, ok := l.mu.reaping[ino]; ok {
		delete(l.mu.reaping, ino)
		close(gate)
	}
	if gone {
		delete(l.mu.orphans, ino)
	}
}

// openedHere reports whether a live session of this Service has ino open.
func (l *leaseTable) openedHere(ino Ino) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	for _, s := range l.mu.openers[ino] {
		if !now.After(s.deadline) {
			return true
		}
	}
	return false
}

// inGrace reports whether the service is in its restart grace.
func (l *leaseTable) inGrace() bool { return l.now().Before(l.graceUntil) }

// HoldOpen implements API.
//
// An open reads the inode linearizable. In a shared store the open record
// is written in the same transaction as that read (recordOpenReading): one
// majority round instead of a record and then a quorum read. A caller that
// allows lag (AllowSerializable) is held open in this Service's session
// only when the store refuses its open record (a site cut off from the
// majority), and then reads the inode serializable, if the inode's own
// policy allows lag (cutoff.go); an inode whose policy does not allow lag
// waits for the majority instead, as updates do.
func (s *Service) HoldOpen(ctx context.Context, ino Ino) (Inode, error) {
	id := sessionOf(ctx)
	lag := SerializableAllowed(ctx)
	lin := linearizable(ctx)
	held, err := s.leases.hold(lin, id, ino)
	if err != nil {
		return Inode{}, fmt.Errorf("open: %w", err)
	}
	var in Inode
	getInode := func(t txn) error {
		rec, err := t.getInode(ino)
		if err == nil {
			in = rec.Inode
		}
		return err
	}
	recorded, tried := true, false
	// read is the leased read of the inode (leasedRead runs it again when
	// a change met it before the grant: the record stands by then).
	read := func() (Ino, error) {
		if held && s.sh != nil && !tried {
			tried = true
			done, err := s.holdRecord(lin, ino, lag, getInode)
			if err != nil || done == readDone {
				return ino, err
			}
			recorded = done != readUnrecorded
		}
		rctx := lin
		if !recorded {
			rctx = AllowSerializable(lin)
		}
		return ino, s.view(rctx, getInode)
	}
	err = s.leasedRead(ctx, ino, read)
	if err == nil && !recorded && !lagPolicy(in.Policy) {
		// The inode's own policy wants what a lagging open cannot
		// give: the open record and a linearizable read, waiting for
		// the majority as every update does.
		if err = s.recordOpen(lin, ino); err == nil {
			s.cut.until.Store(0)
			in, err = s.GetAttr(lin, ino)
		}
	}
	if err != nil {
		if held {
			s.leases.unhold(id, ino)
		}
		return Inode{}, fmt.Errorf("open: %w", err)
	}
	if in.Nlink == 0 {
		// An orphan a reap has begun to drop is as good as gone: its
		// recipe is partly dropped (a crash stopped the reap between
		// segments), and the reaper will finish it.
		// Linearizable: a reap's first segment marks the inode
		// without touching its record, so the open's transaction did
		// not check the mark, and a lagging member may not show it.
		reaping := false
		err := s.view(lin, func(t txn) (err error) {
			reaping, err = t.beingReaped(ino)
			return err
		})
		if err == nil && reaping {
			err = fmt.Errorf("inode %d is being deleted: %w", ino, ErrNotFound)
		}
		if err != nil {
			if held {
				s.leases.unhold(id, ino)
			}
			return Inode{}, fmt.Errorf("open: %w", err)
		}
		s.leases.orphaned(ino)
	}
	return in, nil
}

// ReleaseOpen implements API.
func (s *Service) ReleaseOpen(ctx context.Context, ino Ino) error {
	id := sessionOf(ctx)
	if id == 0 {
		// A caller without a session holds nothing here: its other
		// handles on ino are unknown to the service, so it reaps by
		// itself once its last one is closed (Reap).
		return nil
	}
	reap := s.leases.unhold(id, ino)
	if s.sh != nil && !reap {
		// Nothing to reap here: the record goes in a later batch of
		// drops (opendrops.go), which reaps what another Service
		// orphaned meanwhile. The release waits for no transaction.
		s.dropOpenLater(ino)
		return nil
	}
	if s.sh != nil {
		orphan, err := s.dropOpen(ctx, ino)
		if err != nil {
			// The record stays until tidyOpens drops it.
			s.sh.log.Warn("dropping an open record", "ino", ino, "err", err)
		}
		reap = reap || orphan
	}
	if !reap {
		return nil
	}
	if _, err := s.reap(ctx, ino); err != nil {
		return fmt.Errorf("release %d: %w", ino, err)
	}
	return nil
}

// InGrace reports whether the service is in its restart grace, during which
// no orphan is deleted (see Options.OrphanGrace).
func (s *Service) InGrace() bool { return s.leases.inGrace() }

// graceFor returns the grace a restarted service gives its old clients.
func graceFor(opts Options) time.Duration {
	switch {
	case opts.OrphanGrace > 0:
		return opts.OrphanGrace
	case opts.OrphanGrace < 0:
		return 0
	case opts.SessionTTL > 0:
		return 2 * opts.SessionTTL
	}
	return DefaultOrphanGrace
}

// claims are the inodes one transaction claimed for deletion (startReap),
// ended when it is done. A transaction function may run more than once;
// each inode is claimed at most once.
type claims struct {
	s    *Service
	l    *leaseTable
	inos map[Ino]bool
}

func (s *Service) newClaims() *claims { return &claims{s: s, l: s.leases} }

// claim reports whether ino may be deleted now by transaction t (see
// startReap; in a shared store, no other Service holds it open either). A
// store error counts as held: the orphan stays for the reaper.
func (c *claims) claim(t txn, ino Ino) bool {
	v, ok := c.inos[ino]
	if !ok {
		if c.inos == nil {
			c.inos = make(map[Ino]bool)
		}
		v = c.l.startReap(ino)
		c.inos[ino] = v
	}
	if !v {
		return false
	}
	held, err := c.s.heldElsewhere(t, ino)
	return err == nil && !held
}

// end ends the claims; committed says the transaction committed (so the
// claimed inodes it deleted are gone).
func (c *claims) end(committed bool) {
	for ino, ok := range c.inos {
		if ok {
			c.l.endReap(ino, committed)
		}
	}
}
