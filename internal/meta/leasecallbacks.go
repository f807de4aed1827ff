package meta

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// The callback half of the lease table (leases.go): a committed change
// called back to the other holders of a lease on its inode (notify), the
// Sync caller's wait for their acknowledgements (wait), and a session's
// poll of its queue (poll).

// queueLocked appends cb to s's queue and wakes its poller.
func (l *leaseTable) queueLocked(s *session, cb Callback) uint64 {
	s.seq++
	l.mu.queued++
	cb.Seq = s.seq
	s.pending = append(s.pending, cb)
	close(s.wake)
	s.wake = make(chan struct{})
	return cb.Seq
}

// change is one change to call back.
type change struct {
	ino     Ino
	from    SessionID // the session that made it: not called back; it keeps (or gains) a lease
	since   uint64    // generation before the change was read, for from's grant
	keep    bool      // from gains a lease on ino
	inode   *Inode    // the inode after; nil: invalidate only
	changes []BlockChange
	setSize bool
}

// notify records a committed change and calls it back to every other
// holder of a lease on its inode: an update when there is exactly one, else
// invalidations (which end those leases). It returns what a Sync caller
// waits for.
func (l *leaseTable) notify(c change) []ackWait {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sweepLocked()
	if c.from != 0 && c.keep {
		l.grantLocked(c.from, c.ino, c.since)
	}
	l.changedLocked(c.ino)
	var others []*session
	now := l.now()
	for _, s := range slices.Clone(l.mu.holders[c.ino]) {
		switch {
		case s.id == c.from:
		case now.After(s.deadline):
			l.endLocked(s)
		default:
			others = append(others, s)
		}
	}
	var waits []ackWait
	if len(others) == 1 && c.inode != nil && len(c.changes) <= maxUpdateChanges && !anyComposed(c.changes) {
		cb := Callback{Ino: c.ino, Kind: CallbackUpdate, Inode: *c.inode, SetSize: c.setSize}
		for _, ch := range c.changes {
			cb.Changes = append(cb.Changes, BlockChange{Index: ch.Index, New: ch.New, InlineNew: ch.InlineNew})
		}
		return append(waits, ackWait{others[0], l.queueLocked(others[0], cb)})
	}
	for _, s := range others {
		waits = append(waits, ackWait{s, l.queueLocked(s, Callback{Ino: c.ino, Kind: CallbackInvalidate})})
		l.dropLeaseLocked(s, c.ino)
	}
	return waits
}

// wait returns once every callback in ws is acknowledged or its session
// ended (expired sessions are ended when the clock passes their deadline).
func (l *leaseTable) wait(ctx context.Context, ws []ackWait) error {
	for _, w := range ws {
		for {
			l.mu.Lock()
			if w.s.ended || w.s.acked >= w.seq {
				l.mu.Unlock()
				break
			}
			left := w.s.deadline.Sub(l.now())
			if left < 0 {
				l.endLocked(w.s)
				l.mu.Unlock()
				break
			}
			acks := w.s.acks
			l.mu.Unlock()
			select {
			case <-acks:
			case <-l.after(left + 1): // strictly past the deadline
			case <-ctx.Done():
				return fmt.Errorf("change applied; waiting for session %x to acknowledge: %w (%w)", w.s.id, ctx.Err(), ErrIO)
			}
		}
	}
	return nil
}

// poll is Callbacks: see API.
func (l *leaseTable) poll(ctx context.Context, id SessionID, ack uint64, wait time.Duration) ([]Callback, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sweepLocked()
	s := l.liveLocked(id)
	if s == nil {
		return nil, fmt.Errorf("callbacks of session %x: %w", id, ErrSessionExpired)
	}
	if ack = min(ack, s.seq); ack > s.acked {
		s.acked = ack
		i := 0
		for i < len(s.pending) && s.pending[i].Seq <= ack {
			i++
		}
		s.pending = slices.Delete(s.pending, 0, i)
		close(s.acks)
		s.acks = make(chan struct{})
	}
	s.deadline = l.now().Add(l.ttl)
	if len(s.pending) == 0 && wait > 0 {
		wake := s.wake
		l.mu.Unlock()
		select {
		case <-wake:
		case <-l.after(min(wait, l.ttl/3)):
		case <-ctx.Done():
		}
		l.mu.Lock()
		if s.ended {
			return nil, fmt.Errorf("callbacks of session %x: %w", id, ErrSessionExpired)
		}
		s.deadline = l.now().Add(l.ttl)
	}
	return slices.Clone(s.pending), nil
}

// sessionCount returns how many sessions are live (for tests and status).
func (l *leaseTable) sessionCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.mu.sessions)
}

// anyComposed reports whether a change installs a composed block: its
// holder could not read it from the hash alone, so it is called back with
// an invalidation and reads the recipe (and the composition) again.
func anyComposed(changes []BlockChange) bool {
	for _, ch := range changes {
		if ch.Compose != nil {
			return true
		}
	}
	return false
}
