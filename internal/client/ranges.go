package client

import (
	"slices"
	"sort"
)

// maxSpans bounds the byte ranges tracked per dirty block (64 KiB of them
// at most). A block written in more separate pieces than this counts as
// written whole (see spans.all), which under write sharing can undo another
// client's disjoint writes in that block: so the bound is high enough that
// writes of 1 KiB or more never reach it in a 4 MiB block (bench/capfs.sh
// lost 16 KiB requests to the former bound of 64).
const maxSpans = 4096

// span is the byte range [lo, hi) of one block.
type span struct{ lo, hi int64 }

// spans are the byte ranges of one block that this client changed since the
// commit that last installed the block: what a redo reapplies on top of the
// block's current content after a conflict (redo.go).
//
// The list is sorted, its ranges disjoint and not adjacent (touching ranges
// are merged). Past maxSpans ranges it is not coalesced to its hull: the
// gaps of a hull hold this client's possibly stale view of the old content,
// and a redo would copy that view over another client's newer bytes there,
// bytes this client never wrote — a lost update no order of the writes
// explains. Instead the block is marked all: a redo then takes this client's
// whole block, which is exactly what a write of the whole block (as this
// client sees it) would have done. That is still an outcome of some order of
// writes, one where this client wrote the whole block last; it only arises
// for a block written in more than maxSpans pieces between two commits.
type spans struct {
	iv  []span
	all bool  // the whole block counts as written
	end int64 // the highest end of a write (a truncate's cut does not count)
}

// wrote records a write of [lo, hi).
func (s *spans) wrote(lo, hi int64) {
	s.add(lo, hi)
	s.end = max(s.end, hi)
}

// add marks [lo, hi) as changed without moving end: a truncate's cut,
// whose bytes become zeros but which does not extend the file.
func (s *spans) add(lo, hi int64) {
	if lo >= hi || s.all {
		return
	}
	// The first range that ends at or after lo may touch [lo, hi).
	i := sort.Search(len(s.iv), func(i int) bool { return s.iv[i].hi >= lo })
	j := i
	for j < len(s.iv) && s.iv[j].lo <= hi {
		lo, hi = min(lo, s.iv[j].lo), max(hi, s.iv[j].hi)
		j++
	}
	s.iv = slices.Replace(s.iv, i, j, span{lo, hi})
	if len(s.iv) > maxSpans {
		s.all, s.iv = true, nil
	}
}

// clone returns a copy that shares no memory with s.
func (s spans) clone() spans {
	s.iv = slices.Clone(s.iv)
	return s
}

// empty reports whether nothing was recorded.
func (s *spans) empty() bool { return !s.all && len(s.iv) == 0 }

// overlay copies the recorded ranges of ours (a block's content: bytes past
// its length are zeros) over base, which must be long enough to hold every
// range below len(base); ranges past len(base) are cut there.
func (s *spans) overlay(base, ours []byte) {
	put := func(lo, hi int64) {
		hi = min(hi, int64(len(base)))
		if lo >= hi {
			return
		}
		k := int64(0)
		if lo < int64(len(ours)) {
			k = int64(copy(base[lo:hi], ours[lo:]))
		}
		clear(base[lo+k : hi])
	}
	if s.all {
		put(0, int64(len(base)))
		return
	}
	for _, r := range s.iv {
		put(r.lo, r.hi)
	}
}
