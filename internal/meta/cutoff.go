package meta

import (
	"context"
	"sync/atomic"
	"time"

	"tessera/internal/policy"
)

// This file serves the reads a lag-tolerant policy allows at a site cut off
// from the majority of a shared store (issue 13 item 5). Such a site's
// store member still answers serializable reads, but refuses the writes a
// read makes in a shared store: the lease record a lease needs
// (remotecb.go) and the open record of an open (sharedopens.go). A read
// whose caller allowed lag (AllowSerializable: session, nfs, relaxed) does
// not fail for want of them:
//
//   - a leased read tries its lease record for at most cutoffRecordWait,
//     then serves the read without a lease (the session is told to drop
//     what it cached, as for any read that could not be leased);
//   - HoldOpen tries its open record as long, then holds the inode in
//     this Service's session only and reads it serializable, when the
//     inode's own policy allows lag; otherwise the open fails.
//
// After one such failure the next cutoffMemo of lag-tolerant reads do not
// try again, so a cut-off site answers them at once rather than after a
// wait each. What is given up while cut off: other Services cannot call
// the site's caches back (there are no leases to call), and an inode the
// site holds open only in memory is not protected from a delete through
// another Service (which, being on the other side, could not reach the
// site's block servers either). Updates still wait for the majority
// (etcdkv's majority-wait) and fail: nothing is acknowledged that the
// majority may not hold.

// cutoffRecordWait bounds the record write of a lag-tolerant read. A
// healthy store commits one in a round trip; a write this slow is taken
// for a cut (at worst, on an overloaded store, a few lag-tolerant reads go
// unleased and a few opens read serializable, which their policy allows).
const cutoffRecordWait = 5 * time.Second

// cutoffMemo is how long, after a record write of a lag-tolerant read
// failed, the next ones are not tried.
const cutoffMemo = 10 * time.Second

// cutoff is a Service's memory of a failed record write.
type cutoff struct {
	until  atomic.Int64 // unix nanoseconds: no record attempts before
	logged atomic.Bool  // the cut is logged once until a record succeeds
}

// lagRecord runs write, the record a read by ctx needs. For a caller that
// does not tolerate lag it is write's error. For one that does, write gets
// cutoffRecordWait (nothing while the memo says the last one failed), and
// lagRecord reports false with no error when it fails: the read goes on
// without the record.
func (s *Service) lagRecord(ctx context.Context, what string, write func(ctx context.Context) error) (bool, error) {
	if s.sh == nil || !SerializableAllowed(ctx) {
		return true, write(ctx)
	}
	now := s.now()
	if now.UnixNano() < s.cut.until.Load() {
		return false, nil
	}
	wctx, cancel := context.WithTimeout(ctx, cutoffRecordWait)
	err := write(wctx)
	cancel()
	if err == nil {
		if s.cut.logged.CompareAndSwap(true, false) {
			s.sh.log.Info("meta store writes work again: reads are leased and opens recorded")
		}
		return true, nil
	}
	if ctx.Err() != nil {
		return false, err
	}
	s.cut.until.Store(now.Add(cutoffMemo).UnixNano())
	if s.cut.logged.CompareAndSwap(false, true) {
		s.sh.log.Warn("meta store refuses writes (cut off from its majority?): lag-tolerant reads go on without lease and open records",
			"what", what, "err", err)
	}
	return false, nil
}

// lagPolicy reports whether an inode with policy name (its own; "" is the
// mount's, which the caller checked when it allowed lag) may be opened
// without its open record.
func lagPolicy(name string) bool {
	if name == "" {
		return true
	}
	p, err := policy.Lookup(name)
	return err == nil && p.Knobs().SerializableFor(0)
}

// linearizable strips AllowSerializable's mark from ctx.
func linearizable(ctx context.Context) context.Context {
	if !SerializableAllowed(ctx) {
		return ctx
	}
	return context.WithValue(ctx, serializableKey{}, false)
}

// noLease tells session id that the read of ino it just got is not leased
// (the lease record could not be written): the invalidation makes its
// client drop what it cached of ino, as grantLocked does for a read that
// met a change.
func (l *leaseTable) noLease(id SessionID, ino Ino) {
	if id == 0 || ino == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if s := l.liveLocked(id); s != nil {
		l.queueLocked(s, Callback{Ino: ino, Kind: CallbackInvalidate})
		l.dropLeaseLocked(s, ino)
	}
}
