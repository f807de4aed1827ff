package client

import (
	"container/list"
	"sync"

	"tessera/internal/block"
)

// memCache is an LRU of whole blocks keyed by hash, bounded in bytes. The
// slices it holds are never modified after insertion and may be shared.
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
	h    block.Hash
	data []byte
}

func newMemCache(maxBytes int64) *memCache {
	c := &memCache{max: maxBytes}
	c.mu.ll = list.New()
	c.mu.items = make(map[block.Hash]*list.Element)
	return c
}

func (c *memCache) get(h block.Hash) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.mu.items[h]; ok {
		c.mu.ll.MoveToFront(e)
		c.mu.hits++
		return e.Value.(*memEntry).data, true
	}
	c.mu.miss++
	return nil, false
}

func (c *memCache) contains(h block.Hash) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.mu.items[h]
	return ok
}

func (c *memCache) put(h block.Hash, data []byte) {
	if int64(len(data)) > c.max {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.mu.items[h]; ok {
		c.mu.ll.MoveToFront(e)
		return
	}
	c.mu.items[h] = c.mu.ll.PushFront(&memEntry{h: h, data: data})
	c.mu.used += int64(len(data))
	for c.mu.used > c.max {
		e := c.mu.ll.Back()
		ent := e.Value.(*memEntry)
		c.mu.ll.Remove(e)
		delete(c.mu.items, ent.h)
		c.mu.used -= int64(len(ent.data))
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
	c.mu.ll.Init()
	clear(c.mu.items)
	c.mu.used = 0
}

func (c *memCache) stats() (hits, misses uint64, used int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.hits, c.mu.miss, c.mu.used
}
