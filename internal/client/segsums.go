package client

import (
	"cmp"
	"hash/crc32"
	"slices"
	"sync"
	"sync/atomic"

	"tessera/internal/block"
)

// segSize is the granularity at which local copies of blocks are re-read and
// re-checked: the page size, so that every read the kernel sends for its
// page cache (page-aligned, whole pages) reads exactly the segments it asks
// for, straight into the reply buffer, and checks them in place.
const segSize = 4 << 10

// DefaultSegSumsBytes bounds the memory of the segment sums: 16 MiB, the sums
// of 16 GiB of blocks (a CRC-32C of 4 bytes per 4 KiB, 0.1%).
const DefaultSegSumsBytes = 16 << 20

// sumEntryOverhead approximates an entry's memory besides its sums (list
// element, map slot, header).
const sumEntryOverhead = 160

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// segSums remembers, for blocks whose content this client verified against
// their BLAKE3 name (fetched in full, or hashed itself before an upload), a
// CRC-32C of every 4 KiB segment. A later read of a few KiB from a copy on
// this host (a co-located block file, the disk cache) then reads and checks
// only the segments it needs instead of reading and hashing the whole block:
// the chain of trust is BLAKE3 at first sight, then the CRCs derived from the
// verified bytes, which catch any change of the file since. Bytes from the
// network are always verified in full against BLAKE3.
//
// The table is bounded in bytes (about 4 KiB for a 4 MiB block); past the
// bound the least recently used quarter goes. A read marks its entry with a
// logical clock under a read lock, so that concurrent readers do not queue
// on the table.
type segSums struct {
	max   int64
	clock atomic.Int64 // advanced by every learn
	mu    struct {
		sync.RWMutex
		used  int64
		items map[block.Hash]*sumEntry
	}
}

type sumEntry struct {
	size int64
	sums []uint32
	used atomic.Int64 // clock of the last use
}

func (e *sumEntry) cost() int64 { return int64(len(e.sums))*4 + sumEntryOverhead }

func newSegSums(maxBytes int64) *segSums {
	s := &segSums{max: maxBytes}
	s.mu.items = make(map[block.Hash]*sumEntry)
	return s
}

// learn records the segment sums of data, which the caller verified as h.
func (s *segSums) learn(h block.Hash, data []byte) {
	if _, ok := s.get(h); ok {
		return
	}
	n := (len(data) + segSize - 1) / segSize
	sums := make([]uint32, n)
	for i := range sums {
		sums[i] = crc32.Checksum(data[i*segSize:min(len(data), (i+1)*segSize)], castagnoli)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.mu.items[h]; ok {
		return
	}
	e := &sumEntry{size: int64(len(data)), sums: sums}
	e.used.Store(s.clock.Add(1))
	s.mu.items[h] = e
	s.mu.used += e.cost()
	if s.mu.used > s.max && len(s.mu.items) > 1 {
		s.evictLocked(h)
	}
}

// evictLocked drops the least recently used entries other than keep until
// the table is within 3/4 of its bound.
func (s *segSums) evictLocked(keep block.Hash) { s.evictToLocked(keep, s.max*3/4) }

// idleSumsShare: an idle client keeps the most recently used 1/16 of its
// segment sums' bound (1 MiB by default: the sums of 1 GiB of blocks).
// Under fsx the table filled with the sums of versions truncated or
// unlinked, which no read will ask for again, and was the largest part
// of an idle tessera up's heap; a block whose sums went is read whole
// and verified once more at its next read.
const idleSumsShare = 16

// shrinkIdle drops the least recently used entries until the table holds
// at most its idle share (releaseIdle).
func (s *segSums) shrinkIdle() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.evictToLocked(block.Hash{}, s.max/idleSumsShare)
}

// usedBytes is what the table holds, by its entries' cost.
func (s *segSums) usedBytes() int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.mu.used
}

// evictToLocked drops the least recently used entries other than keep
// until the table holds at most to bytes.
func (s *segSums) evictToLocked(keep block.Hash, to int64) {
	if s.mu.used <= to {
		return
	}
	for _, h := range leastRecent(s.mu.items, keep, func(e *sumEntry) int64 { return e.used.Load() }) {
		if s.mu.used <= to {
			break
		}
		s.mu.used -= s.mu.items[h].cost()
		delete(s.mu.items, h)
	}
}

// leastRecent returns the keys of items other than keep, least recently
// used first by used (a time or a counter).
func leastRecent[V any](items map[block.Hash]V, keep block.Hash, used func(V) int64) []block.Hash {
	type aged struct {
		h    block.Hash
		used int64
	}
	all := make([]aged, 0, len(items))
	for h, v := range items {
		if h != keep {
			all = append(all, aged{h, used(v)})
		}
	}
	slices.SortFunc(all, func(a, b aged) int { return cmp.Compare(a.used, b.used) })
	out := make([]block.Hash, len(all))
	for i, a := range all {
		out[i] = a.h
	}
	return out
}

func (s *segSums) get(h block.Hash) (*sumEntry, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	e, ok := s.mu.items[h]
	if !ok {
		return nil, false
	}
	e.used.Store(s.clock.Load())
	return e, true
}

func (s *segSums) forget(h block.Hash) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.mu.items[h]; ok {
		delete(s.mu.items, h)
		s.mu.used -= e.cost()
	}
}

// span returns the byte range [off, end) of the whole segments covering
// [from, from+n) of a block of e.size bytes, and the first segment's index.
func (e *sumEntry) span(from, n int64) (off, end int64, first int) {
	first = int(from / segSize)
	off = int64(first) * segSize
	end = min(e.size, ((from+n+segSize-1)/segSize)*segSize)
	return off, end, first
}

// check reports whether buf, the segments from index first on, matches the
// remembered sums.
func (e *sumEntry) check(buf []byte, first int) bool {
	for i := 0; len(buf) > 0; i++ {
		seg := buf[:min(len(buf), segSize)]
		if first+i >= len(e.sums) || crc32.Checksum(seg, castagnoli) != e.sums[first+i] {
			return false
		}
		buf = buf[len(seg):]
	}
	return true
}

// len is the number of blocks whose sums the table holds.
func (s *segSums) len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.mu.items)
}
