package client

import (
	"container/list"
	"sync"

	"tessera/internal/block"
	"tessera/internal/meta"
)

// memCache is an LRU of whole blocks keyed by hash, bounded in bytes: the
// capacity of the buffers it holds (charge), not only their length, since
// a buffer's whole capacity stays in memory while the cache holds it. The
// bytes it holds are never modified while it holds them and may be shared:
// it holds a reference to each block (bufpool.go), get hands out one
// more, and an evicted block's reference is released, which gives its
// memory to the fetch pool once no reader holds it.
//
// Blocks this client wrote (putKept: a version uploaded as patches, kept
// for the next small write into the block) take at most keptMax of the
// bound, the oldest going first: under a policy that commits each write,
// a writer of many files (an untar) or of large files in small writes
// otherwise filled the whole cache with versions nobody reads again, and
// the copies behind them were most of the process's peak
// (docs/design/2026-11-28-memory-bounds.md). A kept version leaves once
// its block is stored whole (compact.go).
type memCache struct {
	max     int64
	keptMax int64
	mu      struct {
		sync.Mutex
		used     int64
		keptUsed int64
		ll       *list.List // front = most recent; values are *memEntry
		kept     *list.List // the kept entries, oldest first; values are *list.Element of ll
		items    map[block.Hash]*list.Element
		hits     uint64
		miss     uint64
	}
}

type memEntry struct {
	h    block.Hash
	buf  *blockBuf
	kept *list.Element // in mu.kept, for a block this client wrote; nil otherwise
}

func newMemCache(maxBytes int64) *memCache {
	c := &memCache{max: maxBytes, keptMax: keptBytes(maxBytes)}
	c.mu.ll = list.New()
	c.mu.kept = list.New()
	c.mu.items = make(map[block.Hash]*list.Element)
	return c
}

// keptBytes is the share of a cache of maxBytes that blocks the client
// wrote may take: a quarter (four writers' current blocks of the default
// size in a 64 MiB cache), at least one default block.
func keptBytes(maxBytes int64) int64 {
	return min(maxBytes, max(maxBytes/4, meta.DefaultBlockSize))
}

// get returns block h with a reference the caller must release, or nil.
func (c *memCache) get(h block.Hash) *blockBuf {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.mu.items[h]; ok {
		c.mu.ll.MoveToFront(e)
		c.mu.hits++
		b := e.Value.(*memEntry).buf
		b.ref()
		return b
	}
	c.mu.miss++
	return nil
}

func (c *memCache) contains(h block.Hash) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.mu.items[h]
	return ok
}

// put caches b as block h, taking a reference of its own; the caller
// must hold one.
func (c *memCache) put(h block.Hash, b *blockBuf) { c.add(h, b, false) }

// add caches b as block h (kept: a block this client wrote).
func (c *memCache) add(h block.Hash, b *blockBuf, kept bool) {
	n := charge(b.data)
	if n > c.max || (kept && n > c.keptMax) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.mu.items[h]; ok {
		c.mu.ll.MoveToFront(e)
		return
	}
	b.ref()
	ent := &memEntry{h: h, buf: b}
	e := c.mu.ll.PushFront(ent)
	c.mu.items[h] = e
	c.mu.used += n
	if kept {
		ent.kept = c.mu.kept.PushBack(e)
		c.mu.keptUsed += n
		for c.mu.keptUsed > c.keptMax {
			c.removeLocked(c.mu.kept.Front().Value.(*list.Element))
		}
	}
	for c.mu.used > c.max {
		c.removeLocked(c.mu.ll.Back())
	}
}

// removeLocked drops the entry at e and releases its reference.
func (c *memCache) removeLocked(e *list.Element) {
	ent := e.Value.(*memEntry)
	c.mu.ll.Remove(e)
	delete(c.mu.items, ent.h)
	n := charge(ent.buf.data)
	c.mu.used -= n
	if ent.kept != nil {
		c.mu.kept.Remove(ent.kept)
		c.mu.keptUsed -= n
	}
	ent.buf.release()
}

// charge is what a cached buffer counts against the bound: its capacity,
// less the hasher's slack of a fetched block (hashSlack, at most 16 KiB a
// block beyond the bound), and at least its length.
func charge(b []byte) int64 {
	return int64(max(len(b), cap(b)-hashSlack))
}

// putKept caches data that stays valid for ever (a write buffer never
// written again): it is never reused.
func (c *memCache) putKept(h block.Hash, data []byte) {
	b := newBlockBuf(data, false, nil)
	c.add(h, b, true)
	b.release()
}

// drop removes h from the cache (a newer version of the block replaced it).
func (c *memCache) drop(h block.Hash) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.mu.items[h]; ok {
		c.removeLocked(e)
	}
}

// dropKept removes h if the cache holds it as a block this client wrote
// (a version kept for the next small write): a reader's copy stays.
func (c *memCache) dropKept(h block.Hash) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.mu.items[h]; ok && e.Value.(*memEntry).kept != nil {
		c.removeLocked(e)
	}
}

// demote makes h the first block to evict: a sequential reader is done
// with it (the kernel's page cache has its bytes), so the blocks fetched
// ahead of the reader stay instead.
func (c *memCache) demote(h block.Hash) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.mu.items[h]; ok {
		c.mu.ll.MoveToBack(e)
	}
}

// clear drops every block (an idle client gives its memory back).
func (c *memCache) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for e := c.mu.ll.Front(); e != nil; e = e.Next() {
		e.Value.(*memEntry).buf.release()
	}
	c.mu.ll.Init()
	c.mu.kept.Init()
	clear(c.mu.items)
	c.mu.used, c.mu.keptUsed = 0, 0
}

func (c *memCache) stats() (hits, misses uint64, used int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.hits, c.mu.miss, c.mu.used
}
