package client

import (
	"container/list"
	"sync"

	"tessera/internal/block"
)

// memCache is an LRU of whole blocks keyed by hash, bounded in bytes: the
// capacity of the buffers it holds (charge), not only their length, since
// a buffer's whole capacity stays in memory while the cache holds it. The
// bytes it holds are never modified while it holds them and may be shared:
// it holds a reference to each block (bufpool.go), get hands out one
// more, and an evicted block's reference is released, which gives its
// memory to the fetch pool once no reader holds it.
type memCache struct {
	max int64
	mu  struct {
		sync.Mutex
		used  int64
		ll    *list.List // front = most recent; values are *memEntry
		items map[block.Hash]*list.Element
		hits  uint64
		miss  uint64
	}
}

type memEntry struct {
	h   block.Hash
	buf *blockBuf
}

func newMemCache(maxBytes int64) *memCache {
	c := &memCache{max: maxBytes}
	c.mu.ll = list.New()
	c.mu.items = make(map[block.Hash]*list.Element)
	return c
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
func (c *memCache) put(h block.Hash, b *blockBuf) {
	if charge(b.data) > c.max {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.mu.items[h]; ok {
		c.mu.ll.MoveToFront(e)
		return
	}
	b.ref()
	c.mu.items[h] = c.mu.ll.PushFront(&memEntry{h: h, buf: b})
	c.mu.used += charge(b.data)
	for c.mu.used > c.max {
		e := c.mu.ll.Back()
		ent := e.Value.(*memEntry)
		c.mu.ll.Remove(e)
		delete(c.mu.items, ent.h)
		c.mu.used -= charge(ent.buf.data)
		ent.buf.release()
	}
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
	c.put(h, b)
	b.release()
}

// drop removes h from the cache (a newer version of the block replaced it).
func (c *memCache) drop(h block.Hash) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.mu.items[h]; ok {
		ent := e.Value.(*memEntry)
		c.mu.ll.Remove(e)
		delete(c.mu.items, h)
		c.mu.used -= charge(ent.buf.data)
		ent.buf.release()
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
	clear(c.mu.items)
	c.mu.used = 0
}

func (c *memCache) stats() (hits, misses uint64, used int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.hits, c.mu.miss, c.mu.used
}
