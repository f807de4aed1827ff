package meta

import (
	"context"
	"time"

	"tessera/internal/kv"
)

// This file deletes the open records ("O" ino meta) of a shared store in
// batches. A release that leaves no session of this Service holding the
// inode, and nothing for this Service to reap, does not wait for the
// deletion of its record: it queues the inode, and one drainer (started by
// the release that finds none running, ending when the queue is empty)
// gathers releases for dropWindow (Options.After's clock), then deletes
// the queued records in one transaction per batch; the releases that
// arrive while a batch travels go in the next one. Over etcd that is one
// Raft proposal for many releases instead of one each (issue 29: the
// release was one of a create's four requests through the mount; the
// kernel sends RELEASE after close(2) has returned, so nobody waits for
// the window).
//
// Why a late deletion is safe: the record only keeps the inode from being
// deleted through another Service while this one may hold it open. Until
// the drainer deletes it, an orphan unlinked elsewhere waits (for one
// batch's round trip, or until tidyOpens when a batch fails), and the
// drainer reaps it as dropOpen does (the orphan marker is checked in the
// same transaction). An open of the inode before the drainer gets to it
// finds the record in place (opened) and writes none; the drainer, under
// the inode's stripe, then sees the inode open here and keeps the record.

// maxDropBatch bounds the records one transaction deletes: each costs a
// delete and a compare (the orphan marker), well inside etcd's default of
// 128 operations per transaction.
const maxDropBatch = 32

// dropWindow is how long the drainer gathers releases before its first
// batch: at a few hundred creates per second, a batch of several. It only
// delays the deletion of records nobody waits for (and the reap of an
// orphan unlinked through another Service while open here).
const dropWindow = 20 * time.Millisecond

// dropOpenLater queues the deletion of ino's open record, if this Service
// has one, and starts the drainer unless one runs.
func (s *Service) dropOpenLater(ino Ino) {
	s.sh.mu.Lock()
	defer s.sh.mu.Unlock()
	if !s.sh.mu.opened[ino] {
		return
	}
	s.sh.mu.drops[ino] = struct{}{}
	if s.sh.mu.dropsIdle == nil {
		idle := make(chan struct{})
		s.sh.mu.dropsIdle = idle
		go s.drainDrops(idle)
	}
}

// drainDrops deletes the queued records, a batch at a time, until the
// queue is empty; then it closes idle.
func (s *Service) drainDrops(idle chan struct{}) {
	ctx := context.Background()
	select {
	case <-s.leases.after(dropWindow):
	case <-s.sh.dropsNow:
	}
	for {
		s.sh.mu.Lock()
		var batch []Ino
		for ino := range s.sh.mu.drops {
			if len(batch) == maxDropBatch {
				break
			}
			batch = append(batch, ino)
			delete(s.sh.mu.drops, ino)
		}
		if len(batch) == 0 {
			s.sh.mu.dropsIdle = nil
			s.sh.mu.Unlock()
			close(idle)
			return
		}
		s.sh.mu.Unlock()
		orphans, err := s.dropOpens(ctx, batch)
		if err != nil {
			// The records stay until tidyOpens drops them.
			s.sh.log.Warn("dropping open records", "records", len(batch), "err", err)
			continue
		}
		for _, ino := range orphans {
			if _, err := s.reap(ctx, ino); err != nil {
				s.sh.log.Warn("reaping an orphan released", "ino", ino, "err", err)
			}
		}
	}
}

// dropOpens deletes, in one transaction, the open records of those of inos
// that this Service still records and no session of it holds open, and
// returns the orphans among them (to reap: unlinked through another
// Service meanwhile). The inodes' stripes are held in ascending order
// until the records are gone, as dropOpen holds one.
func (s *Service) dropOpens(ctx context.Context, inos []Ino) (orphans []Ino, err error) {
	defer s.sh.lockStripes(inos)()
	var drop []Ino
	for _, ino := range inos {
		s.sh.mu.Lock()
		done := s.sh.mu.opened[ino]
		s.sh.mu.Unlock()
		if done && !s.leases.openedHere(ino) {
			drop = append(drop, ino)
		}
	}
	if len(drop) == 0 {
		return nil, nil
	}
	err = s.update(ctx, func(t txn) error {
		orphans = orphans[:0]
		for _, ino := range drop {
			if err := t.Delete(openRecKey(ino, s.sh.id)); err != nil {
				return err
			}
			// Almost never there: on etcd the commit checks that
			// instead of a read (dropOpen).
			orphan, err := kv.PresumeAbsent(t.Txn, orphanKey(ino))
			if err != nil {
				return err
			}
			if orphan {
				orphans = append(orphans, ino)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	s.sh.mu.Lock()
	for _, ino := range drop {
		delete(s.sh.mu.opened, ino)
	}
	s.sh.mu.Unlock()
	return orphans, nil
}

// flushOpenDrops waits until no drop is queued or being deleted, ending
// the drainer's window at once.
func (s *Service) flushOpenDrops() {
	select {
	case s.sh.dropsNow <- struct{}{}:
	default:
	}
	for {
		s.sh.mu.Lock()
		idle := s.sh.mu.dropsIdle
		s.sh.mu.Unlock()
		if idle == nil {
			return
		}
		<-idle
	}
}
