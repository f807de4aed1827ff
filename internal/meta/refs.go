package meta

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	"tessera/internal/block"
	"tessera/internal/kv"
)

// Block reference counts and the release log (see "Reference counts" in
// doc.go). Every transaction that adds or drops recipe entries gathers the
// changes in a refDeltas and stores them with applyRefs before it commits,
// so a count is always the number of recipe entries naming its block.

// refDeltas is one transaction's changes to block reference counts.
type refDeltas map[block.Hash]int64

// add counts n more entries naming h; holes (the zero hash) have no count.
func (d refDeltas) add(h block.Hash, n int64) {
	if !h.IsZero() && n != 0 {
		d[h] += n
	}
}

// replace records that an entry naming old now names new.
func (d refDeltas) replace(old, new block.Hash) {
	if old != new {
		d.add(old, -1)
		d.add(new, 1)
	}
}

// applyRefs stores d. A count that reaches 0 is deleted and a release of
// its block is logged at now, for the reclaimer.
func (t txn) applyRefs(d refDeltas, now int64) error {
	// A composed block that loses its last reference takes its
	// composition with it, and the references it held on its pieces:
	// those deltas are applied in a second round (pieces are never
	// composed themselves, so the rounds end).
	for len(d) > 0 {
		next := refDeltas{}
		if err := t.applyRefsOnce(d, now, next); err != nil {
			return err
		}
		d = next
	}
	return nil
}

// applyRefsOnce applies d, adding to next the deltas of the pieces of
// composed blocks whose count reached 0.
func (t txn) applyRefsOnce(d refDeltas, now int64, next refDeltas) error {
	hs := make([]block.Hash, 0, len(d))
	for h, n := range d {
		if n != 0 {
			hs = append(hs, h)
		}
	}
	slices.SortFunc(hs, func(a, b block.Hash) int { return bytes.Compare(a[:], b[:]) })
	for _, h := range hs {
		cur, err := t.getRefs(h)
		if err != nil {
			return err
		}
		n := int64(cur) + d[h]
		switch {
		case n < 0:
			// An entry is dropped that was never counted: the counts are
			// wrong, and a block could be reclaimed while a recipe names
			// it. Never go on silently.
			return corruptf("block %s: %d references dropped, %d counted", h, -d[h], cur)
		case n == 0:
			if err := t.Delete(refKey(h)); err != nil {
				return err
			}
			if err := t.dropComposition(h, next); err != nil {
				return err
			}
			if err := t.Put(releaseKey(now, h), encodeRelease()); err != nil {
				return err
			}
		default:
			if err := t.Put(refKey(h), encodeRef(uint64(n))); err != nil {
				return err
			}
		}
	}
	return nil
}

// releaseUnnamed logs a release at now of each of hs that no recipe names
// (CommitReq.Superseded): uploads no commit will name, for the reclaimer.
// It stops once t has used as much as b: the rest are left to the full
// collection, like those past MaxSuperseded.
func (t txn) releaseUnnamed(hs []block.Hash, now int64, b budget) error {
	for _, h := range hs {
		if h.IsZero() {
			continue
		}
		if !t.fits(b) {
			return nil
		}
		n, err := t.getRefs(h)
		if err != nil {
			return err
		}
		if n == 0 {
			if err := t.Put(releaseKey(now, h), encodeRelease()); err != nil {
				return err
			}
		}
	}
	return nil
}

// getRefs returns the reference count of h (0 when it has no record).
func (t txn) getRefs(h block.Hash) (uint64, error) {
	v, ok, err := t.Get(refKey(h))
	if err != nil || !ok {
		return 0, err
	}
	return decodeRef(v)
}

// BlockRefs returns the number of recipe entries, orphans' included, that
// name block h.
func (s *Service) BlockRefs(ctx context.Context, h block.Hash) (uint64, error) {
	var n uint64
	err := s.view(ctx, func(t txn) (err error) {
		n, err = t.getRefs(h)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("references of block %s: %w", h.Short(), err)
	}
	return n, nil
}

// Release records that a block's reference count reached 0 at At (unix ns,
// the meta service's clock): from then on no recipe named it. Refs is its
// count when the release was read; a block named again since has Refs > 0
// and its release is stale.
type Release struct {
	Hash block.Hash
	At   int64
	Refs uint64
}

// key returns the release's key, without Refs.
func (r Release) key() []byte { return releaseKey(r.At, r.Hash) }

// ReleasePage is the number of releases one Releases call returns when
// its limit is 0.
const ReleasePage = 1024

// Releases returns up to limit releases made before `before` (unix ns),
// oldest first, starting after the release `after` (the zero Release:
// from the first), each with its block's current reference count, in one
// snapshot; more reports whether other releases before `before` remain.
func (s *Service) Releases(ctx context.Context, after Release, before int64, limit int) (rs []Release, more bool, err error) {
	if limit <= 0 {
		limit = ReleasePage
	}
	start := []byte{pfxRelease}
	if after != (Release{}) {
		start = append(after.key(), 0)
	}
	err = s.view(ctx, func(t txn) error {
		rs, more = rs[:0], false
		return t.Scan(start, releaseKey(before, block.Hash{}), func(k, v []byte) (bool, error) {
			if len(rs) == limit {
				more = true
				return false, nil
			}
			at, h, err := parseReleaseKey(k)
			if err != nil {
				return false, err
			}
			if err := decodeRelease(v); err != nil {
				return false, err
			}
			n, err := t.getRefs(h)
			if err != nil {
				return false, err
			}
			rs = append(rs, Release{Hash: h, At: at, Refs: n})
			return true, nil
		})
	})
	if err != nil {
		return nil, false, fmt.Errorf("list releases: %w", err)
	}
	return rs, more, nil
}

// DropReleases deletes releases from the log, in one transaction: their
// blocks were removed from every server, or are named again.
func (s *Service) DropReleases(ctx context.Context, rs []Release) error {
	if len(rs) == 0 {
		return nil
	}
	err := s.update(ctx, func(t txn) error {
		for _, r := range rs {
			if err := t.Delete(r.key()); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("drop %d releases: %w", len(rs), err)
	}
	return nil
}

// DropReleasesBefore deletes every release made before `before` (unix ns),
// a page per transaction, and returns how many it deleted. A full
// collection whose cutoff is `before` calls it once every server answered:
// it removed every unreferenced copy older than its cutoff, which is all
// those releases would have removed. Without it a store whose reclaimer is
// off would keep a release per overwrite forever.
func (s *Service) DropReleasesBefore(ctx context.Context, before int64) (int, error) {
	total := 0
	for {
		n := 0
		err := s.update(ctx, func(t txn) error {
			var keys [][]byte
			err := t.Scan([]byte{pfxRelease}, releaseKey(before, block.Hash{}), func(k, _ []byte) (bool, error) {
				keys = append(keys, bytes.Clone(k))
				return len(keys) < ReleasePage, nil
			})
			if err != nil {
				return err
			}
			for _, k := range keys {
				if err := t.Delete(k); err != nil {
					return err
				}
			}
			n = len(keys)
			return nil
		})
		if err != nil {
			return total, fmt.Errorf("drop releases: %w", err)
		}
		total += n
		if n < ReleasePage {
			return total, nil
		}
	}
}

// RefMismatch is a block whose stored reference count differs from the
// number of recipe entries naming it.
type RefMismatch struct {
	Hash            block.Hash
	Stored, Counted uint64
}

// CheckRefs recounts every recipe entry in one snapshot and returns the
// blocks whose stored counts differ, for tests and fsck. It reads the
// whole recipe table: it is not for a hot path.
func (s *Service) CheckRefs(ctx context.Context) ([]RefMismatch, error) {
	var out []RefMismatch
	err := s.view(ctx, func(t txn) error {
		out = out[:0]
		counted, err := t.countRefs()
		if err != nil {
			return err
		}
		p := []byte{pfxRef}
		err = t.Scan(p, kv.PrefixEnd(p), func(k, v []byte) (bool, error) {
			h, err := parseRefKey(k)
			if err != nil {
				return false, err
			}
			n, err := decodeRef(v)
			if err != nil {
				return false, err
			}
			if counted[h] != n {
				out = append(out, RefMismatch{Hash: h, Stored: n, Counted: counted[h]})
			}
			delete(counted, h)
			return true, nil
		})
		for h, n := range counted {
			out = append(out, RefMismatch{Hash: h, Counted: n})
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("check references: %w", err)
	}
	slices.SortFunc(out, func(a, b RefMismatch) int { return bytes.Compare(a.Hash[:], b.Hash[:]) })
	return out, nil
}

// countRefs counts the recipe entries naming each block.
func (t txn) countRefs() (map[block.Hash]uint64, error) {
	counted := map[block.Hash]uint64{}
	p := []byte{pfxSegment}
	err := t.Scan(p, kv.PrefixEnd(p), func(k, v []byte) (bool, error) {
		if _, _, err := parseSegmentKey(k); err != nil {
			return false, err
		}
		hs, err := decodeSegment(v)
		if err != nil {
			return false, err
		}
		for _, h := range hs {
			if !h.IsZero() {
				counted[h]++
			}
		}
		return true, nil
	})
	return counted, err
}

// addRefCounts builds the reference counts of a store of format 1, which
// kept none, from its recipes. Blocks already unreferenced get no release:
// the full collection (tessera gc, the background walk) finds them.
func (t txn) addRefCounts() error {
	counted, err := t.countRefs()
	if err != nil {
		return err
	}
	for h, n := range counted {
		if err := t.Put(refKey(h), encodeRef(n)); err != nil {
			return err
		}
	}
	return nil
}
