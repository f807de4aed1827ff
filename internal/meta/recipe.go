package meta

import (
	"context"
	"fmt"
	"math"
	"sort"

	"tessera/internal/block"
	"tessera/internal/kv"
)

// MaxRecipeRun is the most block hashes one GetRecipe returns; a caller that
// asks for more gets a shorter run and asks again from where it ends.
const MaxRecipeRun = 64 * SegmentBlocks

// ceilDiv returns the number of blocks of size bs that size bytes span.
func ceilDiv(size, bs uint64) uint64 { return size/bs + min(size%bs, 1) }

// regularFile checks that rec is a regular file, as recipe operations need.
func regularFile(rec *inodeRec) error {
	switch {
	case rec.IsRegular():
		return nil
	case rec.IsDir():
		return ErrIsDir
	}
	return ErrInvalid
}

// GetRecipe returns the hashes of blocks [first, first+count) that lie below
// the file's size, at most MaxRecipeRun of them.
func (s *Service) GetRecipe(ctx context.Context, ino Ino, first, count uint64) (Recipe, error) {
	var out Recipe
	err := s.leasedRead(ctx, ino, func() (Ino, error) { return ino, s.getRecipe(ctx, ino, first, count, &out) })
	if err != nil {
		return Recipe{}, fmt.Errorf("get recipe %d [%d,+%d): %w", ino, first, count, err)
	}
	return out, nil
}

func (s *Service) getRecipe(ctx context.Context, ino Ino, first, count uint64, outp *Recipe) error {
	var out Recipe
	defer func() { *outp = out }()
	return s.view(ctx, func(t txn) error {
		rec, err := t.getInode(ino)
		if err != nil {
			return err
		}
		if err := regularFile(rec); err != nil {
			return err
		}
		out = Recipe{Change: rec.Change, Size: rec.Size, First: first}
		if first == 0 && rec.HasInline {
			out.HasInline, out.Inline = true, rec.Inline
		}
		nb := ceilDiv(rec.Size, uint64(rec.BlockSize))
		if first >= nb || count == 0 {
			return nil
		}
		n := min(count, nb-first, MaxRecipeRun)
		out.Blocks = make([]block.Hash, n)
		firstSeg, _ := segOf(first)
		lastSeg, _ := segOf(first + n - 1)
		err = t.Scan(segmentKey(ino, firstSeg), segmentKey(ino, lastSeg+1), func(k, v []byte) (bool, error) {
			_, seg, err := parseSegmentKey(k)
			if err != nil {
				return false, err
			}
			hs, err := decodeSegment(v)
			if err != nil {
				return false, err
			}
			base := seg * SegmentBlocks
			for i, h := range hs {
				if idx := base + uint64(i); idx >= first && idx-first < n {
					out.Blocks[idx-first] = h
				}
			}
			return true, nil
		})
		if err != nil || !rec.composed {
			return err
		}
		out.Composed, err = t.compositionsOf(out.Blocks, nil)
		return err
	})
}

// segments caches the recipe segments one transaction reads and changes,
// and gathers the changes to reference counts that its sets make.
type segments struct {
	t     txn
	ino   Ino
	segs  map[uint64][]block.Hash
	dirty map[uint64]bool
	refs  refDeltas
}

func newSegments(t txn, ino Ino, refs refDeltas) *segments {
	return &segments{t: t, ino: ino, segs: map[uint64][]block.Hash{}, dirty: map[uint64]bool{}, refs: refs}
}

func (ss *segments) load(seg uint64) ([]block.Hash, error) {
	if hs, ok := ss.segs[seg]; ok {
		return hs, nil
	}
	v, ok, err := ss.t.Get(segmentKey(ss.ino, seg))
	var hs []block.Hash
	if err == nil && ok {
		hs, err = decodeSegment(v)
	}
	if err != nil {
		return nil, err
	}
	ss.segs[seg] = hs
	return hs, nil
}

// get returns entry index (zero for a hole).
func (ss *segments) get(index uint64) (block.Hash, error) {
	seg, slot := segOf(index)
	hs, err := ss.load(seg)
	if err != nil || slot >= len(hs) {
		return block.Hash{}, err
	}
	return hs[slot], nil
}

// set changes entry index; flush writes it.
func (ss *segments) set(index uint64, h block.Hash) error {
	seg, slot := segOf(index)
	hs, err := ss.load(seg)
	if err != nil {
		return err
	}
	if slot >= len(hs) {
		if h.IsZero() {
			return nil
		}
		hs = append(hs, make([]block.Hash, slot+1-len(hs))...)
	}
	ss.refs.replace(hs[slot], h)
	hs[slot] = h
	ss.segs[seg] = hs
	ss.dirty[seg] = true
	return nil
}

// flush writes the changed segments, deleting all-hole ones.
func (ss *segments) flush() error {
	for seg := range ss.dirty {
		k := segmentKey(ss.ino, seg)
		var err error
		if v := encodeSegment(ss.segs[seg]); v == nil {
			err = ss.t.Delete(k)
		} else {
			err = ss.t.Put(k, v)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// trimInline cuts rec's inline block-0 data to size, dropping it at size 0.
func trimInline(rec *inodeRec, size uint64) {
	if !rec.HasInline {
		return
	}
	if size == 0 {
		rec.HasInline, rec.Inline = false, nil
	} else if uint64(len(rec.Inline)) > size {
		rec.Inline = rec.Inline[:size]
	}
}

// dropSegmentsFrom deletes the recipe entries of ino at or past index nb,
// counting them in refs.
func (t txn) dropSegmentsFrom(ino Ino, nb uint64, refs refDeltas) error {
	seg, slot := segOf(nb)
	type kvp struct{ k, v []byte }
	var found []kvp
	p := segmentPrefix(ino)
	err := t.Scan(segmentKey(ino, seg), kv.PrefixEnd(p), func(k, v []byte) (bool, error) {
		found = append(found, kvp{append([]byte(nil), k...), append([]byte(nil), v...)})
		return true, nil
	})
	if err != nil {
		return err
	}
	for _, f := range found {
		_, sg, err := parseSegmentKey(f.k)
		if err != nil {
			return err
		}
		hs, err := decodeSegment(f.v)
		if err != nil {
			return err
		}
		from := 0
		if sg == seg {
			from = slot
		}
		if len(hs) <= from {
			continue
		}
		for _, h := range hs[from:] {
			refs.add(h, -1)
		}
		if v := encodeSegment(hs[:from]); v != nil {
			if err := t.Put(f.k, v); err != nil {
				return err
			}
			continue
		}
		if err := t.Delete(f.k); err != nil {
			return err
		}
	}
	return nil
}

// Commit installs new block hashes into a file's recipe if every old hash
// still matches (or the commit is forced), as DESIGN §2.3 describes. The
// size becomes req.Size (SetSize) or the larger of the two; entries at or
// past the resulting end are dropped, changes there included. A conflict's
// Current lists the named indices in ascending order.
func (s *Service) Commit(ctx context.Context, req CommitReq) (Inode, error) {
	mark := s.leaseMark(ctx, req.Ino)
	var out Inode
	// The holders are called back inside the Sync change: once it ends,
	// readers waiting for it get leases on the new state, and a callback
	// sent after that would reach them too (and a Sync one wait for their
	// acknowledgement of a change they never saw the old side of).
	err := s.syncChange(ctx, req.Ino, req.Sync, func() (err error) {
		out, err = s.commit(ctx, req, mark)
		return err
	})
	if err != nil {
		return Inode{}, fmt.Errorf("commit inode %d: %w", req.Ino, err)
	}
	return out, nil
}

// commit is Commit; mark is the lease mark its caller gains a lease with.
func (s *Service) commit(ctx context.Context, req CommitReq, mark uint64) (Inode, error) {
	changes := append([]BlockChange(nil), req.Changes...)
	sort.Slice(changes, func(i, j int) bool { return changes[i].Index < changes[j].Index })
	for i, c := range changes {
		if i > 0 && changes[i-1].Index == c.Index {
			return Inode{}, fmt.Errorf("block %d named twice: %w", c.Index, ErrInvalid)
		}
		if c.InlineNew && (c.Index != 0 || len(c.NewInline) > InlineMax) {
			return Inode{}, fmt.Errorf("inline block %d of %d bytes: %w", c.Index, len(c.NewInline), ErrInvalid)
		}
		if c.Compose != nil && c.InlineNew {
			return Inode{}, fmt.Errorf("block %d both inline and composed: %w", c.Index, ErrInvalid)
		}
	}
	if len(changes) > MaxCommitBlocks {
		return Inode{}, fmt.Errorf("%d blocks in one commit, at most %d (split it): %w", len(changes), MaxCommitBlocks, ErrTooBig)
	}
	if len(req.Superseded) > MaxSuperseded {
		return Inode{}, fmt.Errorf("%d superseded blocks, max %d: %w", len(req.Superseded), MaxSuperseded, ErrInvalid)
	}
	var out Inode
	pending := false
	err := s.updateTrimmed(ctx, req.Ino, func(t txn) error {
		pending = false
		rec, err := t.getInode(req.Ino)
		if err != nil {
			return err
		}
		if err := regularFile(rec); err != nil {
			return err
		}
		bs := uint64(rec.BlockSize)
		if n := len(changes); n > 0 && changes[n-1].Index >= math.MaxUint64/bs {
			return fmt.Errorf("block %d past the largest file: %w", changes[n-1].Index, ErrInvalid)
		}
		refs := refDeltas{}
		ss := newSegments(t, rec.Ino, refs)
		if !req.Forced {
			if err := compareOld(t, ss, rec, changes); err != nil {
				return err
			}
		}
		size := max(rec.Size, req.Size)
		if req.SetSize {
			size = req.Size
		}
		end := ceilDiv(size, bs)
		for _, c := range changes {
			if c.Index >= end {
				// Past the resulting end: dropped below with what is
				// there, never named (compared above all the same).
				if c.Compose != nil {
					if err := c.Compose.check(rec.BlockSize); err != nil {
						return fmt.Errorf("block %d: %w", c.Index, err)
					}
				}
				continue
			}
			h := c.New
			if c.Index == 0 {
				rec.HasInline, rec.Inline = c.InlineNew, nil
				if c.InlineNew {
					h = block.Hash{}
					rec.Inline = append([]byte{}, c.NewInline...)
				}
			}
			if c.Compose != nil {
				if err := t.compose(h, *c.Compose, rec.BlockSize, refs); err != nil {
					return fmt.Errorf("block %d: %w", c.Index, err)
				}
				rec.composed = true
			}
			if err := ss.set(c.Index, h); err != nil {
				return err
			}
		}
		if err := ss.flush(); err != nil {
			return err
		}
		oldSize := rec.Size
		rec.Size = size
		now := s.nowNs()
		if err := t.applyRefs(refs, now); err != nil {
			return err
		}
		// Entries at or past the end would resurface if the file grew by
		// a truncate, which must leave holes: drop them, as many as the
		// bound leaves room for; a pending drop names the rest, which
		// no reader sees (they lie past the end), and Commit drops them
		// in further transactions before it returns.
		trimInline(rec, rec.Size)
		if n := len(changes); req.SetSize || (n > 0 && changes[n-1].Index >= ceilDiv(rec.Size, bs)) {
			from := ceilDiv(rec.Size, bs)
			fin := false
			if t.fits(s.soft()) { // else the changes filled it: drop all later
				if fin, _, err = t.dropTail(rec.Ino, from, s.soft(), now); err != nil {
					return err
				}
			}
			if !fin {
				pending = true
				if err := t.Put(pendingKey(rec.Ino), encodePending(pendingDrop{from: from})); err != nil {
					return err
				}
			}
		}
		if req.Mtime != 0 {
			rec.Mtime = req.Mtime
		}
		rec.touch(now)
		if err := t.releaseUnnamed(req.Superseded, now, s.soft()); err != nil {
			return err
		}
		out = rec.Inode
		tell := &notice{change: change{ino: req.Ino, since: mark, keep: true, inode: &out, changes: req.Changes,
			setSize: req.SetSize}, sync: req.Sync}
		if err := t.record(edit{kind: editContent, ino: rec.Ino, rec: rec, sizeDelta: int64(rec.Size - oldSize), tell: tell}); err != nil {
			return err
		}
		if err := t.putInode(rec); err != nil {
			return err
		}
		return s.checkBound(t, "commit")
	})
	if err == nil && pending {
		err = s.finishDrop(ctx, req.Ino)
	}
	return out, err
}

// compareOld checks every change's Old against the current entry; on any
// mismatch it returns a *ConflictError listing the current hash of every
// named index.
func compareOld(t txn, ss *segments, rec *inodeRec, changes []BlockChange) error {
	cur := make([]BlockChange, len(changes))
	conflict := false
	for i, c := range changes {
		cur[i].Index = c.Index
		if c.Index == 0 && rec.HasInline {
			cur[i].New = block.Sum(rec.Inline)
			cur[i].InlineNew, cur[i].NewInline = true, append([]byte{}, rec.Inline...)
		} else {
			h, err := ss.get(c.Index)
			if err != nil {
				return err
			}
			cur[i].New = h
		}
		if cur[i].New != c.Old {
			conflict = true
		}
	}
	if conflict {
		// The writer redoes its change on the current blocks: it needs
		// the compositions of those that are composed to read them.
		for i := range cur {
			if !rec.composed || cur[i].InlineNew {
				continue
			}
			c, ok, err := t.getComposition(cur[i].New)
			if err != nil {
				return err
			}
			if ok {
				cur[i].Compose = &c
			}
		}
		return &ConflictError{Ino: rec.Ino, Current: cur}
	}
	return nil
}
