package meta

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"

	"tessera/internal/kv"
)

// This file calls changes back across the Services of a shared store
// (shared.go). A Service writes its lease record of an inode ("L" ino meta)
// before it grants any of its sessions a lease on it (grantLocked refuses a
// lease on an inode not recorded), so a change that commits after a lease's
// read finds the record. The change's transaction reads the inode's lease
// records and, for each other live Service, writes a callback request
// ("C" holder req) with the change (noticeHook, notice.go); the holder
// watches its requests, invalidates its sessions' leases on the inode, and
// deletes the request once each acknowledged or expired. A Sync change waits for those
// deletions (or the holder's liveness to lapse), so Sync keeps its meaning
// across Services. Callbacks across Services are always invalidations.
// A holder drops its lease record lazily: when it delivers a request, or
// tidies (ServeShared), and none of its sessions holds a lease on the inode
// any more.

// ensureLease writes this Service's lease record of ino unless it is
// recorded already. Recording counts as a change of ino in the lease table,
// so a read that began before the record existed grants nothing.
func (s *Service) ensureLease(ctx context.Context, ino Ino) error {
	if s.sh == nil || ino == 0 || s.leases.isRecorded(ino) {
		return nil
	}
	mu := s.sh.stripe(ino)
	mu.Lock()
	defer mu.Unlock()
	if s.leases.isRecorded(ino) {
		return nil
	}
	err := s.update(ctx, func(t txn) error { return t.Put(leaseRecKey(ino, s.sh.id), []byte{recordV1}) })
	if err != nil {
		return fmt.Errorf("record lease on %d: %w", ino, err)
	}
	s.leases.record(ino)
	return nil
}

// notedNew notes the records of a shared store the transaction that
// created ino wrote (createIno): its open record, and its lease record,
// which counts as no change of ino (unlike ensureLease's): the inode did
// not exist before that transaction, so no read of it began before the
// record, and every change after it finds the record.
func (s *Service) notedNew(ino Ino, recs newRecords) {
	if recs.open {
		s.sh.mu.Lock()
		s.sh.mu.opened[ino] = true
		s.sh.mu.Unlock()
	}
	if recs.lease {
		s.leases.recordNew(ino)
	}
}

// recordNew writes the lease record of in, which the calling session
// created (or found) and is to gain a lease on, and returns the mark to
// grant it with: a fresh one when the inode did not change before the
// record was written (its change counter is still in's), else mark (the
// grant then fails with an invalidation, as for any read that met a
// change).
func (s *Service) recordNew(ctx context.Context, in Inode, mark uint64) uint64 {
	if s.sh == nil || sessionOf(ctx) == 0 || s.leases.isRecorded(in.Ino) {
		return mark
	}
	if err := s.ensureLease(ctx, in.Ino); err != nil {
		return mark
	}
	fresh := s.readMark()
	same := false
	err := s.view(ctx, func(t txn) error {
		rec, err := t.getInode(in.Ino)
		same = err == nil && rec.Change == in.Change
		return err
	})
	if err != nil || !same {
		return mark
	}
	return fresh
}

// writeCalls writes in t a callback request of ino to every other live
// Service that recorded a lease on it, and drops the lease records of
// lapsed ones. It returns the requests written.
func (s *Service) writeCalls(t txn, ino Ino) ([][]byte, error) {
	var holders []MetaID
	p := inoKey(pfxLease, ino)
	err := t.Scan(p, kv.PrefixEnd(p), func(k, _ []byte) (bool, error) {
		_, mid, err := parseInoMeta(k)
		if err == nil && mid != s.sh.id {
			holders = append(holders, mid)
		}
		return err == nil, err
	})
	if err != nil {
		return nil, err
	}
	now := s.now()
	var reqs [][]byte
	for _, mid := range holders {
		until, ok, err := t.liveUntil(mid)
		if err != nil {
			return nil, err
		}
		if !ok || now.After(until) {
			// Its sessions are gone with it: nobody to call back.
			if err := t.Delete(leaseRecKey(ino, mid)); err != nil {
				return nil, err
			}
			continue
		}
		k := binary.BigEndian.AppendUint64(callReqPrefix(mid), rand.Uint64())
		if err := t.Put(k, encodeCallReq(ino, s.sh.id)); err != nil {
			return nil, err
		}
		reqs = append(reqs, k)
	}
	return reqs, nil
}

// tidyBatch is how many unheld lease records one tidyLeases round drops.
const tidyBatch = 256

// tidyLeases drops lease records of inodes on which no session of s holds
// a lease any more (their sessions ended, or their leases were dropped), a
// batch per call, so that neither the store nor the in-memory set grows
// with every inode ever read through s.
func (s *Service) tidyLeases(ctx context.Context) {
	inos := s.leases.unheldRecorded(tidyBatch)
	if len(inos) == 0 {
		return
	}
	// Lock the stripes in order (ensureLease and finishRequest hold one
	// at a time), so no record is written between the check and the
	// delete.
	defer s.sh.lockStripes(inos)()
	var drop []Ino
	for _, ino := range inos {
		if s.leases.unrecordIfUnheld(ino) {
			drop = append(drop, ino)
		}
	}
	err := s.update(ctx, func(t txn) error {
		for _, ino := range drop {
			if err := t.Delete(leaseRecKey(ino, s.sh.id)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil && ctx.Err() == nil {
		// Unrecorded but still in the store: a harmless extra callback
		// later.
		s.sh.log.Warn("dropping lease records", "count", len(drop), "err", err)
	}
}

// waitRemote returns once every request in reqs was deleted by its holder,
// or the holder's liveness lapsed (its sessions expired with it).
func (s *Service) waitRemote(ctx context.Context, reqs [][]byte) error {
	for _, k := range reqs {
		if err := s.waitRequest(ctx, k); err != nil {
			return err
		}
	}
	return nil
}

func (s *Service) waitRequest(ctx context.Context, k []byte) error {
	holder := MetaID(be64(k[1:9]))
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Watch first, then look: a deletion after the look is on the feed.
	ch, err := s.sh.watcher.Watch(wctx, k, 0)
	if err != nil {
		ch = nil // look again each round instead
	}
	for {
		pending, lapsed := false, false
		now := s.now()
		err := s.view(ctx, func(t txn) error {
			_, ok, err := t.Get(k)
			if err != nil || !ok {
				pending = false
				return err
			}
			pending = true
			until, live, err := t.liveUntil(holder)
			lapsed = !live || now.After(until)
			return err
		})
		if err != nil {
			return fmt.Errorf("change applied; waiting for meta %s to call back: %w", holder, err)
		}
		if !pending || lapsed {
			return nil
		}
	wait:
		for {
			select {
			case batch, ok := <-ch:
				if !ok {
					ch = nil
					break wait
				}
				for _, c := range batch {
					if c.Deleted && bytes.Equal(c.Key, k) {
						return nil
					}
				}
			case <-s.leases.after(s.sh.ttl / 3):
				break wait
			case <-ctx.Done():
				return fmt.Errorf("change applied; waiting for meta %s to call back: %w (%w)", holder, ctx.Err(), ErrIO)
			}
		}
	}
}

// deliverLoop delivers the callback requests addressed to s until ctx
// ends, watching again (and reading every pending request) whenever the
// feed breaks.
func (s *Service) deliverLoop(ctx context.Context) {
	p := callReqPrefix(s.sh.id)
	for ctx.Err() == nil {
		ch, err := s.sh.watcher.Watch(ctx, p, 0)
		if err != nil {
			s.sh.log.Warn("watching callback requests", "err", err)
			select {
			case <-ctx.Done():
				return
			case <-s.leases.after(s.sh.ttl / 3):
			}
			continue
		}
		// Requests written before the watch began.
		var pending []kv.Change
		err = s.view(ctx, func(t txn) error {
			pending = pending[:0]
			return t.Scan(p, kv.PrefixEnd(p), func(k, v []byte) (bool, error) {
				pending = append(pending, kv.Change{Key: append([]byte(nil), k...), Value: append([]byte(nil), v...)})
				return true, nil
			})
		})
		if err != nil && ctx.Err() == nil {
			s.sh.log.Warn("reading callback requests", "err", err)
		}
		s.deliverAll(ctx, pending)
		for batch := range ch {
			s.deliverAll(ctx, batch)
		}
	}
}

func (s *Service) deliverAll(ctx context.Context, batch []kv.Change) {
	for _, c := range batch {
		if c.Deleted {
			continue
		}
		ino, _, err := decodeCallReq(c.Value)
		if err != nil {
			s.sh.log.Warn("callback request", "key", fmt.Sprintf("%x", c.Key), "err", err)
			continue
		}
		key := string(c.Key)
		s.sh.mu.Lock()
		busy := s.sh.mu.inflight[key]
		s.sh.mu.inflight[key] = true
		s.sh.mu.Unlock()
		if busy {
			continue
		}
		// Invalidate now, in feed order; wait for the acknowledgements
		// apart, so one slow client does not hold up the others.
		waits := s.leases.invalidateAll(ino)
		go s.finishRequest(ctx, c.Key, ino, waits)
	}
}

// finishRequest waits for the invalidations of one request to be
// acknowledged (or their sessions to expire), then deletes the request.
// The lease record of ino stays: the sessions it invalidated are likely to
// read ino again soon (a reader at one site of a file written at another),
// and a read that finds the record needs no majority write before it.
// tidyLeases drops the record at its next round if no session leased ino
// again meanwhile; until then a change of ino costs one more callback
// request, answered at once (docs/design/2026-11-25-lease-records-kept.md).
func (s *Service) finishRequest(ctx context.Context, k []byte, ino Ino, waits []ackWait) {
	defer func() {
		s.sh.mu.Lock()
		delete(s.sh.mu.inflight, string(k))
		s.sh.mu.Unlock()
	}()
	if err := s.leases.wait(ctx, waits); err != nil {
		return // ctx ended; the request stays for the next life, or the cleanup
	}
	err := s.update(ctx, func(t txn) error { return t.Delete(k) })
	if err != nil && ctx.Err() == nil {
		// The request stays and is delivered again after the next
		// watch restart: a harmless extra callback.
		s.sh.log.Warn("acknowledging a callback request", "ino", ino, "err", err)
	}
}
