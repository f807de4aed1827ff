package meta

import (
	"context"
	"errors"
	"fmt"

	"tessera/internal/block"
	"tessera/internal/kv"
)

// Reap deletes the orphan ino (Nlink 0): its inode, recipe, xattrs and
// orphan marker, and takes it off the usage counters. Reaping a linked inode,
// one already gone, one a live session has open (HoldOpen) or any during the
// restart grace does nothing. A reap of ino already under way (the
// background tidying's, or another caller's) is waited for, so that once
// Reap returns an orphan nobody holds is gone.
func (s *Service) Reap(ctx context.Context, ino Ino) error {
	for {
		gone, err := s.reap(ctx, ino)
		if err != nil {
			return fmt.Errorf("reap %d: %w", ino, err)
		}
		gate := s.leases.reapUnderWay(ino)
		if gone || gate == nil {
			return nil
		}
		select {
		case <-gate:
		case <-ctx.Done():
			return fmt.Errorf("reap %d: waiting for another reap of it: %w (%w)", ino, ctx.Err(), ErrIO)
		}
	}
}

// reap is Reap; it reports whether it deleted the inode. The recipe goes
// in segments of at most Options.MaxTxnOps operations (segment.go), each
// its own transaction with its entries' reference counts; the first that
// leaves some marks the orphan as being deleted (a pending drop with
// reap set: HoldOpen and Link then treat it as gone), and the last deletes
// the inode, its orphan marker and the pending drop. A crash between
// segments leaves an orphan whose remaining entries are counted; the next
// reap goes on from there.
func (s *Service) reap(ctx context.Context, ino Ino) (bool, error) {
	if !s.leases.startReap(ino) {
		return false, nil
	}
	gone, linked := false, false
	var err error
	for {
		done, dropped := false, 0
		err = s.updateCounted(ctx, func(t txn) error {
			gone, linked, done, dropped = false, false, true, 0
			v, ok, err := t.Get(inodeKey(ino))
			if err != nil {
				return err
			}
			if !ok {
				gone = true
				return nil
			}
			rec, err := decodeInode(ino, v)
			if err != nil {
				return err
			}
			if rec.Nlink > 0 {
				linked = true
				return nil
			}
			if held, err := s.heldElsewhere(t, ino); err != nil || held {
				return err // another Service's session has it open
			}
			p, marked, err := t.getPending(ino)
			if err != nil {
				return err
			}
			now := s.nowNs()
			fin, n, err := t.dropTail(ino, 0, s.soft(), now)
			if err != nil {
				return err
			}
			if !fin {
				done, dropped = false, n
				if marked && p.reap && p.from == 0 {
					return nil
				}
				return t.Put(pendingKey(ino), encodePending(pendingDrop{reap: true}))
			}
			gone = true
			return t.deleteInode(rec, now, false)
		})
		if err != nil || done {
			break
		}
		if dropped == 0 {
			err = fmt.Errorf("a segment dropped nothing: %w", ErrIO)
			break
		}
		if err = s.segmentDone("reap", ino); err != nil {
			break
		}
	}
	// Either way it is no orphan (any more): its last release need not
	// try again.
	s.leases.endReap(ino, err == nil && (gone || linked))
	if err == nil && gone {
		s.leases.gone(0, ino)
	}
	return err == nil && gone, err
}

// beingReaped reports whether a reap of the orphan ino has begun dropping
// its recipe (a crash may have stopped it there): it is as good as gone.
func (t txn) beingReaped(ino Ino) (bool, error) {
	p, ok, err := t.getPending(ino)
	return ok && p.reap, err
}

// fitsOneTxn reports whether deleting rec in one transaction stays within
// the bound: no drop is pending, no block was composed (dropping one may
// drop its pieces' references too) and its entries with their counts and
// releases fit.
func (s *Service) fitsOneTxn(t txn, rec *inodeRec) (bool, error) {
	if !rec.IsRegular() {
		return true, nil
	}
	if _, ok, err := t.getPending(rec.Ino); err != nil || ok {
		return false, err
	}
	nb := ceilDiv(rec.Size, uint64(rec.BlockSize))
	return !rec.composed && nb <= uint64(s.soft().ops-txnReserve)/2, nil
}

// deleteInode removes an unlinked inode with its recipe, xattrs and orphan
// marker, and takes it off the usage counters and its blocks' reference
// counts (releasing those it named last at now). linked says the inode
// had a link when this transaction read it and, if regular, no pending
// drop (fitsOneTxn looked): it has no orphan marker and no pending drop
// to delete. Those Deletes are left out then: a Delete costs the store a
// read of the key for its change feed (pebblekv), 3 of an unlink's 5.
func (t txn) deleteInode(rec *inodeRec, now int64, linked bool) error {
	ino := rec.Ino
	refs := refDeltas{}
	if err := t.dropSegmentsFrom(ino, 0, refs); err != nil {
		return err
	}
	if err := t.applyRefs(refs, now); err != nil {
		return err
	}
	if !linked {
		if err := t.Delete(pendingKey(ino)); err != nil {
			return err
		}
	}
	if err := t.deletePrefix(xattrPrefix(ino)); err != nil {
		return err
	}
	if !linked {
		if err := t.unorphan(rec); err != nil {
			return err
		}
	}
	if rec.IsDir() {
		if err := t.reparentOrphans(ino, rec.Parent); err != nil {
			return err
		}
	}
	if err := t.Delete(inodeKey(ino)); err != nil {
		return err
	}
	return t.record(edit{kind: editDelete, ino: ino, rec: rec})
}

// Orphans lists up to limit orphan inodes with numbers above after, for a
// reaper that runs after a crash; more reports whether others remain.
func (s *Service) Orphans(ctx context.Context, after Ino, limit int) (inos []Ino, more bool, err error) {
	if limit <= 0 {
		limit = DefaultReadDirLimit
	}
	if after == ^Ino(0) {
		return nil, false, nil
	}
	err = s.view(ctx, func(t txn) error {
		inos, more = inos[:0], false
		p := []byte{pfxOrphan}
		return t.Scan(orphanKey(after+1), kv.PrefixEnd(p), func(k, _ []byte) (bool, error) {
			if len(inos) == limit {
				more = true
				return false, nil
			}
			ino, err := parseOrphanKey(k)
			inos = append(inos, ino)
			return err == nil, err
		})
	})
	if err != nil {
		return nil, false, fmt.Errorf("list orphans: %w", err)
	}
	return inos, more, nil
}

// BlockRef is one recipe entry: block Index of inode Ino is Hash.
type BlockRef struct {
	Ino   Ino
	Index uint64
	Hash  block.Hash
}

// BlockLister is the optional capability of listing recipe entries a page at
// a time, which lets WalkBlocks cross an RPC boundary without holding one
// long call. Implementations without it are walked with WalkBlocks.
type BlockLister interface {
	// ListBlocks returns up to limit non-hole recipe entries ordered by
	// (Ino, Index) that come after (afterIno, afterIndex); more reports
	// whether others remain. Start with (0, 0).
	ListBlocks(ctx context.Context, afterIno Ino, afterIndex uint64, limit int) (refs []BlockRef, more bool, err error)
}

// WalkPage is the number of recipe entries one WalkBlocks transaction reads.
const WalkPage = 4096

// ListBlocks implements BlockLister.
func (s *Service) ListBlocks(ctx context.Context, afterIno Ino, afterIndex uint64, limit int) ([]BlockRef, bool, error) {
	if limit <= 0 {
		limit = WalkPage
	}
	var refs []BlockRef
	more := false
	err := s.view(ctx, func(t txn) error {
		refs, more = refs[:0], false
		seg, _ := segOf(afterIndex)
		composed := map[Ino]bool{}
		return t.Scan(segmentKey(afterIno, seg), kv.PrefixEnd([]byte{pfxSegment}), func(k, v []byte) (bool, error) {
			ino, seg, err := parseSegmentKey(k)
			if err != nil {
				return false, err
			}
			hs, err := decodeSegment(v)
			if err != nil {
				return false, err
			}
			isComposed, known := composed[ino]
			if !known {
				rec, err := t.getInode(ino)
				if err != nil && !errors.Is(err, ErrNotFound) {
					return false, err
				}
				isComposed = err == nil && rec.composed
				composed[ino] = isComposed
			}
			for i, h := range hs {
				idx := seg*SegmentBlocks + uint64(i)
				if h.IsZero() || (ino == afterIno && idx <= afterIndex) {
					continue
				}
				if len(refs) >= limit {
					more = true
					return false, nil
				}
				// A composed block is stored as its pieces: those are
				// what must exist, be kept and be replicated.
				if isComposed {
					c, ok, err := t.getComposition(h)
					if err != nil {
						return false, err
					}
					if ok {
						for _, p := range c.Pieces() {
							refs = append(refs, BlockRef{Ino: ino, Index: idx, Hash: p})
						}
						continue
					}
				}
				refs = append(refs, BlockRef{Ino: ino, Index: idx, Hash: h})
			}
			return true, nil
		})
	})
	if err != nil {
		return nil, false, fmt.Errorf("list blocks after %d/%d: %w", afterIno, afterIndex, err)
	}
	return refs, more, nil
}

// WalkBlocks calls fn with every non-hole recipe entry, orphans' included
// (for a composed block, with each of its pieces instead: compose.go),
// reading WalkPage entries per transaction and calling fn outside them.
func (s *Service) WalkBlocks(ctx context.Context, fn func(ino Ino, index uint64, h block.Hash) error) error {
	return WalkLister(ctx, s, fn)
}

// WalkLister walks every entry of l page by page, for WalkBlocks.
func WalkLister(ctx context.Context, l BlockLister, fn func(ino Ino, index uint64, h block.Hash) error) error {
	var ino Ino
	var idx uint64
	for {
		refs, more, err := l.ListBlocks(ctx, ino, idx, WalkPage)
		if err != nil {
			return err
		}
		for _, r := range refs {
			if err := fn(r.Ino, r.Index, r.Hash); err != nil {
				return err
			}
			ino, idx = r.Ino, r.Index
		}
		if !more || len(refs) == 0 {
			return nil
		}
	}
}
