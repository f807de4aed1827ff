package meta

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"tessera/internal/kv"
)

// Bounded transactions (issue 13; docs/design/2026-11-25-segments.md).
//
// An etcd transaction holds at most --max-txn-ops compares and at most as
// many writes. What grows with a file's size (the recipe entries a reap or
// a truncate drops, with their reference counts and releases) is therefore
// dropped in segments, each its own transaction of at most
// Options.MaxTxnOps operations, and a Commit whose transaction would need
// more is refused before anything is sent (ErrTooBig). Between segments
// the store is consistent: every recipe entry left is counted, every one
// dropped is not, and a pending-drop record ("t" ino) says what is left
// to drop, so that whoever comes next (the same call, the reaper after a
// crash, the next Commit or SetAttr of the file) finishes it.

// DefaultMaxTxnOps is Options.MaxTxnOps when it is 0: a quarter of etcd's
// default --max-txn-ops (16,384).
const DefaultMaxTxnOps = 4096

// DefaultMaxTxnBytes is Options.MaxTxnBytes when it is 0: a quarter of
// etcdkv's --max-request-bytes (32 MiB).
const DefaultMaxTxnBytes = 8 << 20

// MinTxnBytes is the least Options.MaxTxnBytes New accepts: room for a few
// full recipe segments (32 KiB each) besides the rest.
const MinTxnBytes = 1 << 20

// MinTxnOps is the least Options.MaxTxnOps New accepts: an operation's
// fixed part (inode, counters, markers, session records) must fit with
// room to spare for the entries it drops.
const MinTxnOps = 64

// txnReserve is the part of MaxTxnOps a segment leaves for what follows
// its drops in the same transaction (the inode, counters, the markers).
const txnReserve = 24

// pfxPending is the prefix of pending-drop records: "t" ino.
const pfxPending = 't'

func pendingKey(ino Ino) []byte { return inoKey(pfxPending, ino) }

// pendingDrop is what a segmented drop of ino has left: every recipe entry
// at or past from, none of which a reader can see (they lie past the end
// of the file, or the file is an orphan being deleted).
type pendingDrop struct {
	from uint64
	reap bool // the inode is being deleted: it is no longer opened or linked
}

// Record: 1 | from 8 | flags 1 (bit0 reap).
func encodePending(p pendingDrop) []byte {
	b := binary.BigEndian.AppendUint64([]byte{recordV1}, p.from)
	var f byte
	if p.reap {
		f = 1
	}
	return append(b, f)
}

func decodePending(b []byte) (pendingDrop, error) {
	if len(b) != 10 || b[0] != recordV1 || b[9] > 1 {
		return pendingDrop{}, corruptf("pending drop record %x", b)
	}
	return pendingDrop{from: be64(b[1:]), reap: b[9] == 1}, nil
}

func (t txn) getPending(ino Ino) (pendingDrop, bool, error) {
	v, ok, err := t.Get(pendingKey(ino))
	if err != nil || !ok {
		return pendingDrop{}, false, err
	}
	p, err := decodePending(v)
	return p, err == nil, err
}

// opCount counts the distinct keys a transaction read and wrote and the
// ranges it scanned, as etcdkv counts compares and operations: a Get is a
// compare, and so is every key a Scan returned, and the scanned range.
// A Scan stopped early may have fetched, and so compare, a page of keys
// beyond what it returned (etcdkv's ScanPage, 256): the scans of
// dropTail bound their range for that (extra), the others read narrow
// ranges, and the default bound leaves a page of headroom below etcd's.
type opCount struct {
	reads        map[string]struct{}
	writes       map[string]int // key -> bytes of the key and its last value
	scans, extra int
	bytes        int // the sum of writes' bytes
}

func newOpCount() *opCount {
	return &opCount{reads: map[string]struct{}{}, writes: map[string]int{}}
}

// cost is the larger of the transaction's compares and writes.
func (c *opCount) cost() int { return max(len(c.reads)+c.scans+c.extra, len(c.writes)) }

// wrote records a write of n bytes to k.
func (c *opCount) wrote(k []byte, n int) {
	c.bytes += n - c.writes[string(k)]
	c.writes[string(k)] = n
}

// countTxn is a kv.Txn that counts what passes through it.
type countTxn struct {
	kv.Txn
	c *opCount
}

func (t countTxn) Get(k []byte) ([]byte, bool, error) {
	t.c.reads[string(k)] = struct{}{}
	return t.Txn.Get(k)
}

// GetMany counts each key as a read (a compare at commit) as Get does.
func (t countTxn) GetMany(keys [][]byte) ([][]byte, []bool, error) {
	for _, k := range keys {
		t.c.reads[string(k)] = struct{}{}
	}
	return kv.GetMany(t.Txn, keys)
}

// PresumeAbsent counts the key as a read (a compare at commit) as Get does.
func (t countTxn) PresumeAbsent(k []byte) (bool, error) {
	t.c.reads[string(k)] = struct{}{}
	return kv.PresumeAbsent(t.Txn, k)
}

// Prefetch counts the keys as reads (the store compares them at commit);
// a prefetched range counts once it is scanned.
func (t countTxn) Prefetch(keys [][]byte, ranges []kv.Range) error {
	for _, k := range keys {
		t.c.reads[string(k)] = struct{}{}
	}
	return kv.Prefetch(t.Txn, keys, ranges)
}

func (t countTxn) Put(k, v []byte) error {
	t.c.wrote(k, len(k)+len(v))
	return t.Txn.Put(k, v)
}

func (t countTxn) Delete(k []byte) error {
	t.c.wrote(k, len(k))
	return t.Txn.Delete(k)
}

func (t countTxn) Scan(start, end []byte, fn func(k, v []byte) (bool, error)) error {
	t.c.scans++
	return t.Txn.Scan(start, end, func(k, v []byte) (bool, error) {
		t.c.reads[string(k)] = struct{}{}
		return fn(k, v)
	})
}

// count returns t's counter, nil when t is not counted.
func (t txn) count() *opCount {
	if c, ok := t.Txn.(countTxn); ok {
		return c.c
	}
	return nil
}

// budget is how much of a transaction a step may fill: operations (the
// larger of compares and writes) and bytes written.
type budget struct{ ops, bytes int }

// fits reports whether t has used less than b (always, uncounted).
func (t txn) fits(b budget) bool {
	c := t.count()
	return c == nil || (c.cost() < b.ops && c.bytes < b.bytes)
}

// updateCounted is update with the transaction counted (txn.count).
func (s *Service) updateCounted(ctx context.Context, fn func(t txn) error) error {
	return s.update(ctx, func(t txn) error {
		return fn(txn{countTxn{Txn: t.Txn, c: newOpCount()}})
	})
}

// soft is how much of a transaction a segment's drops may fill: the
// bounds less room for what follows them (txnReserve operations, 64 KiB).
func (s *Service) soft() budget {
	return budget{ops: s.maxTxnOps - txnReserve, bytes: s.maxTxnBytes - 64<<10}
}

// checkBound fails with ErrTooBig when t needs more than MaxTxnOps
// operations or MaxTxnBytes bytes: before the store sees it, with what was
// too big.
func (s *Service) checkBound(t txn, what string) error {
	c := t.count()
	if c == nil {
		return nil
	}
	if n := c.cost(); n > s.maxTxnOps {
		return fmt.Errorf("%s needs %d operations in one transaction, the bound is %d (Options.MaxTxnOps): %w",
			what, n, s.maxTxnOps, ErrTooBig)
	}
	if c.bytes > s.maxTxnBytes {
		return fmt.Errorf("%s writes %d bytes in one transaction, the bound is %d (Options.MaxTxnBytes): %w",
			what, c.bytes, s.maxTxnBytes, ErrTooBig)
	}
	return nil
}

// dropTail drops the recipe entries of ino at or past index from, with
// their references (releasing blocks at now), until t has used as much as
// b: within a recipe segment from its end down, segment after segment. It
// reports whether none is left and how many it dropped; it drops at least
// one when any is left, whatever the budget.
func (t txn) dropTail(ino Ino, from uint64, b budget, now int64) (done bool, dropped int, err error) {
	seg, slot := segOf(from)
	for {
		key, val, err := t.nextSegment(ino, seg)
		if err != nil || key == nil {
			return err == nil, dropped, err
		}
		_, sg, err := parseSegmentKey(key)
		if err != nil {
			return false, dropped, err
		}
		hs, err := decodeSegment(val)
		if err != nil {
			return false, dropped, err
		}
		lo := 0
		if sg == seg {
			lo = slot
		}
		n := len(hs)
		for n > lo && (dropped == 0 || t.fits(b)) {
			n--
			d := refDeltas{}
			d.add(hs[n], -1)
			if err := t.applyRefs(d, now); err != nil {
				return false, dropped, err
			}
			dropped++
		}
		if n < len(hs) {
			if v := encodeSegment(hs[:n]); v != nil {
				err = t.Put(key, v)
			} else {
				err = t.Delete(key)
			}
			if err != nil {
				return false, dropped, err
			}
		}
		if n > lo {
			return false, dropped, nil // out of room
		}
		seg, slot = sg+1, 0
	}
}

// segWindow is how many segment numbers nextSegment scans at first.
const segWindow = 16

// nextSegment returns the first recipe segment of ino numbered seg or
// more (nil when there is none). It scans a window of segWindow numbers
// first, so that the store fetches (and compares) no more than that many
// keys, counted as such; only a file with a gap that wide is scanned to
// its end.
func (t txn) nextSegment(ino Ino, seg uint64) (key, val []byte, err error) {
	first := func(k, v []byte) (bool, error) {
		key, val = bytes.Clone(k), bytes.Clone(v)
		return false, nil
	}
	end := kv.PrefixEnd(segmentPrefix(ino))
	if seg+segWindow > seg { // no wrap
		if c := t.count(); c != nil {
			c.extra += segWindow
		}
		if err := t.Scan(segmentKey(ino, seg), segmentKey(ino, seg+segWindow), first); err != nil || key != nil {
			return key, val, err
		}
		seg += segWindow
	}
	err = t.Scan(segmentKey(ino, seg), end, first)
	return key, val, err
}

// errPendingDrop aborts a transaction that found a pending drop of its
// inode: updateTrimmed finishes the drop and runs it again.
var errPendingDrop = errors.New("a pending drop of the inode comes first")

// maxTrimRounds bounds how often updateTrimmed finishes a drop that keeps
// coming back (truncates racing with the call).
const maxTrimRounds = 8

// updateTrimmed runs fn in a counted transaction that finds no pending
// drop of ino, finishing one first when there is: entries past the end of
// a file must be gone before a change may grow it or name them.
func (s *Service) updateTrimmed(ctx context.Context, ino Ino, fn func(t txn) error) error {
	for round := 0; ; round++ {
		err := s.updateCounted(ctx, func(t txn) error {
			if _, ok, err := t.getPending(ino); err != nil {
				return err
			} else if ok {
				return errPendingDrop
			}
			return fn(t)
		})
		if !errors.Is(err, errPendingDrop) {
			return err
		}
		if round == maxTrimRounds {
			return fmt.Errorf("inode %d: its recipe was cut %d times meanwhile: %w", ino, round, ErrIO)
		}
		if err := s.finishDrop(ctx, ino); err != nil {
			return err
		}
	}
}

// finishDrop drops, a segment per transaction, what the pending drop of
// ino has left, and then the record. An orphan being deleted is not
// finished here (reap does that): it is ErrNotFound.
func (s *Service) finishDrop(ctx context.Context, ino Ino) error {
	for {
		done := false
		err := s.updateCounted(ctx, func(t txn) error {
			done = false
			p, ok, err := t.getPending(ino)
			if err != nil || !ok {
				done = err == nil
				return err
			}
			if p.reap {
				return fmt.Errorf("inode %d is being deleted: %w", ino, ErrNotFound)
			}
			fin, _, err := t.dropTail(ino, p.from, s.soft(), s.nowNs())
			if err != nil || !fin {
				return err
			}
			done = true
			return t.Delete(pendingKey(ino))
		})
		if err != nil {
			return fmt.Errorf("drop the recipe of %d past its end: %w", ino, err)
		}
		if done {
			return nil
		}
		if err := s.segmentDone("trim", ino); err != nil {
			return err
		}
	}
}

// FinishDrops finishes every pending drop of entries past a file's end
// (those a crash left between segments) and returns how many. Drops of
// orphans being deleted are the reaper's (ReapOrphans).
func (s *Service) FinishDrops(ctx context.Context) (int, error) {
	n := 0
	after := Ino(0)
	for {
		var inos []Ino
		next := after
		err := s.view(ctx, func(t txn) error {
			// A rerun (kv.Store.View) starts again from after.
			inos, next = inos[:0], after
			p := []byte{pfxPending}
			return t.Scan(pendingKey(after+1), kv.PrefixEnd(p), func(k, v []byte) (bool, error) {
				if len(k) != 9 {
					return false, corruptf("pending drop key %x", k)
				}
				ino := Ino(be64(k[1:]))
				pd, err := decodePending(v)
				if err != nil {
					return false, err
				}
				if !pd.reap {
					inos = append(inos, ino)
				}
				next = ino
				return len(inos) < ReleasePage, nil
			})
		})
		if err != nil {
			return n, fmt.Errorf("list pending drops: %w", err)
		}
		after = next
		for _, ino := range inos {
			if err := s.finishDrop(ctx, ino); err != nil {
				return n, err
			}
			n++
		}
		if len(inos) < ReleasePage {
			return n, nil
		}
	}
}

// segmentDone is called between the segments of a drop; a test's fault
// hook (Options-free, set by export_test.go) stops the drop there as a
// crash would.
func (s *Service) segmentDone(op string, ino Ino) error {
	if f := s.segmentFault; f != nil {
		return f(op, ino)
	}
	return nil
}
