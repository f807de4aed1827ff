package meta

import (
	"context"
	"errors"
	"fmt"

	"tessera/internal/kv"
)

// This file keeps the open records ("O" ino meta) of a Service of a shared
// store (shared.go): one per inode some session of the Service holds open,
// written in the transaction that reads the inode for the open
// (holdRecord; a create that opens writes it in a transaction of its own,
// hold) and deleted when the last of its sessions' opens ends. A delete
// anywhere reads them in its transaction (heldElsewhere), so an orphan
// held open through one Service is not deleted through another. The
// records of a Service whose liveness lapsed hold their inodes for the
// orphan grace more, the time its clients have to fail over and announce
// their opens again elsewhere.

// hold is leases.hold plus, in a shared store, the open record of ino. The
// record is written before the caller reads the inode: a delete that
// commits after it sees it, one that committed before leaves the read
// finding the inode gone.
func (s *Service) hold(ctx context.Context, id SessionID, ino Ino) (bool, error) {
	held, err := s.leases.hold(ctx, id, ino)
	if err != nil || !held || s.sh == nil {
		return held, err
	}
	if err := s.recordOpen(ctx, ino); err != nil {
		s.leases.unhold(id, ino)
		return false, err
	}
	return true, nil
}

// holdRecord's outcomes.
type recordOutcome int

const (
	readDone       recordOutcome = iota // the record written, read ran in its transaction
	recordedBefore                      // the record was there already; read did not run
	readUnrecorded                      // lag allowed and the store refused the record; read did not run
)

// holdRecord writes, for HoldOpen, the open record of ino with read (the
// inode's read) in the same transaction. When lag is allowed and the store
// refuses the record (lagRecord), ino stays held in the session only.
func (s *Service) holdRecord(ctx context.Context, ino Ino, lag bool, read func(t txn) error) (recordOutcome, error) {
	out := recordedBefore
	var readErr error
	write := func(ctx context.Context) error {
		did, err := s.recordOpenReading(ctx, ino, read)
		if did {
			out = readDone
		}
		if err != nil && errors.Is(err, ErrNotFound) {
			// The inode is gone: no record, and no cut either.
			out, readErr = readDone, err
			return nil
		}
		return err
	}
	if !lag {
		err := write(ctx)
		if err == nil {
			err = readErr
		}
		return out, err
	}
	recorded, err := s.lagRecord(AllowSerializable(ctx), "open record", write)
	if err != nil {
		return out, err
	}
	if !recorded {
		return readUnrecorded, nil
	}
	return out, readErr
}

// recordOpen writes the open record of ino unless it is written already.
func (s *Service) recordOpen(ctx context.Context, ino Ino) error {
	_, err := s.recordOpenReading(ctx, ino, nil)
	return err
}

// recordOpenReading is recordOpen that also runs read, when given, in the
// transaction that writes the record, and reports whether it did (false:
// the record was there already, nothing ran). That transaction may read
// its snapshot from the nearest store replica (kv.Serializable): its
// commit checks what read saw, which is therefore current at the commit,
// when the record is in place.
func (s *Service) recordOpenReading(ctx context.Context, ino Ino, read func(t txn) error) (bool, error) {
	mu := s.sh.stripe(ino)
	mu.Lock()
	defer mu.Unlock()
	s.sh.mu.Lock()
	done := s.sh.mu.opened[ino]
	s.sh.mu.Unlock()
	if done {
		return false, nil
	}
	if read != nil {
		ctx = kv.WithConsistency(ctx, kv.Serializable)
	}
	err := s.update(ctx, func(t txn) error {
		if err := t.Put(openRecKey(ino, s.sh.id), []byte{recordV1}); err != nil {
			return err
		}
		if read != nil {
			return read(t)
		}
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("record open of %d: %w", ino, err)
	}
	s.sh.mu.Lock()
	s.sh.mu.opened[ino] = true
	s.sh.mu.Unlock()
	return read != nil, nil
}

// dropOpen deletes the open record of ino when no session of s holds ino
// open any more, and reports whether ino is then an orphan (worth a reap:
// it may have been unlinked through another Service, which could not
// delete it while this one held it).
func (s *Service) dropOpen(ctx context.Context, ino Ino) (orphan bool, err error) {
	mu := s.sh.stripe(ino)
	mu.Lock()
	defer mu.Unlock()
	s.sh.mu.Lock()
	done := s.sh.mu.opened[ino]
	s.sh.mu.Unlock()
	if !done || s.leases.openedHere(ino) {
		return false, nil
	}
	err = s.update(ctx, func(t txn) error {
		orphan = false
		if err := t.Delete(openRecKey(ino, s.sh.id)); err != nil {
			return err
		}
		// Almost never there: on etcd the commit checks that instead of
		// a read (one round trip fewer per release).
		orphan, err = kv.PresumeAbsent(t.Txn, orphanKey(ino))
		return err
	})
	if err != nil {
		return false, fmt.Errorf("drop open record of %d: %w", ino, err)
	}
	s.sh.mu.Lock()
	delete(s.sh.mu.opened, ino)
	s.sh.mu.Unlock()
	return orphan, nil
}

// tidyOpens drops the open records no session of s needs any more (their
// sessions expired or closed) and reaps the orphans among them.
func (s *Service) tidyOpens(ctx context.Context) {
	s.sh.mu.Lock()
	var inos []Ino
	for ino := range s.sh.mu.opened {
		inos = append(inos, ino)
	}
	s.sh.mu.Unlock()
	for _, ino := range inos {
		if s.leases.openedHere(ino) {
			continue
		}
		orphan, err := s.dropOpen(ctx, ino)
		if err != nil {
			if ctx.Err() == nil {
				s.sh.log.Warn("dropping an open record", "ino", ino, "err", err)
			}
			continue
		}
		if orphan {
			if _, err := s.reap(ctx, ino); err != nil && ctx.Err() == nil {
				s.sh.log.Warn("reaping an orphan released", "ino", ino, "err", err)
			}
		}
	}
}

// heldElsewhere reports whether another Service of the shared store holds
// ino open: it has an open record, and its liveness has not lapsed longer
// ago than the orphan grace.
func (s *Service) heldElsewhere(t txn, ino Ino) (bool, error) {
	if s.sh == nil {
		return false, nil
	}
	var others []MetaID
	p := inoKey(pfxOpen, ino)
	err := t.Scan(p, kv.PrefixEnd(p), func(k, _ []byte) (bool, error) {
		_, mid, err := parseInoMeta(k)
		if err == nil && mid != s.sh.id {
			others = append(others, mid)
		}
		return err == nil, err
	})
	if err != nil {
		return false, err
	}
	now := s.now()
	for _, mid := range others {
		until, ok, err := t.liveUntil(mid)
		if err != nil {
			return false, err
		}
		if ok && !now.After(until.Add(s.sh.grace)) {
			return true, nil
		}
	}
	return false, nil
}
