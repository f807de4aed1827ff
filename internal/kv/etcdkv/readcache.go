package etcdkv

import (
	"bytes"
	"slices"
	"sync"
)

// The read cache (issue 29): what this Store last read or committed of a
// key, with the key's ModRevision, and a few whole ranges a Prefetch read,
// each with the revision they were read at. The first run of an Update's
// fn takes a read from it instead of a round trip; the read is recorded
// as any read (ModRevision(k) = m per key, ModRevision < rev+1 over a
// range) and compared at commit, so a stale entry is a conflict, never a
// wrong commit: fn runs again reading etcd, and the entries it read are
// dropped. An Update that only read, or whose fn failed, after a cached
// read checks its reads with a read-only Txn (validate) before it returns,
// as with Options.LocalUpdateReads. Views never read from it. A create
// through the mount reads the parent and the name in the kernel's LOOKUP
// just before; with them (and the hooks' ranges, and the usage shard its
// own last create wrote) cached, the create's commit is its only request.
// docs/design/2026-11-29-etcd-read-cache.md.

// maxCachedRanges bounds the ranges kept; a range of more than
// maxCachedRangeKeys keys is not kept.
const maxCachedRanges, maxCachedRangeKeys = 16, 64

type readCache struct {
	mu     sync.Mutex
	max    int
	keys   map[string]cachedKey
	ranges []cachedRange // rev set
}

// cachedKey is a key as etcd held it at revision at.
type cachedKey struct {
	r  read
	at int64
}

func newReadCache(max int) *readCache {
	if max <= 0 {
		return nil
	}
	return &readCache{max: max, keys: make(map[string]cachedKey)}
}

// get returns key as last known; nil c has nothing.
func (c *readCache) get(key string) (read, bool) {
	if c == nil {
		return read{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.keys[key]
	return e.r, ok
}

// learn records key as etcd held it at revision at, unless a later
// revision of it is known.
func (c *readCache) learn(key string, r read, at int64) {
	if c == nil || at <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.learnLocked(key, r, at)
}

func (c *readCache) learnLocked(key string, r read, at int64) {
	if e, ok := c.keys[key]; ok {
		if e.at > at {
			return
		}
	} else if len(c.keys) >= c.max {
		for k := range c.keys { // an arbitrary one: the bound matters, not the choice
			delete(c.keys, k)
			break
		}
	}
	// Clipped: a caller's append to a value it read from the cache
	// copies it, never writes past its end into memory another sees.
	r.value = slices.Clip(r.value)
	c.keys[key] = cachedKey{r: r, at: at}
}

// span returns a copy of the range [start, end) as read whole at rev.
func (c *readCache) span(start, end []byte) (cachedRange, bool) {
	if c == nil {
		return cachedRange{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range c.ranges {
		if bytes.Equal(r.start, start) && bytes.Equal(r.end, end) {
			return cachedRange{start: bytes.Clone(start), end: bytes.Clone(end), kvs: r.kvs, rev: r.rev}, true
		}
	}
	return cachedRange{}, false
}

// learnSpan records the range r (read whole at r.rev).
func (c *readCache) learnSpan(r cachedRange) {
	if c == nil || r.rev <= 0 || len(r.kvs) > maxCachedRangeKeys {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, x := range c.ranges {
		if bytes.Equal(x.start, r.start) && bytes.Equal(x.end, r.end) {
			if x.rev < r.rev {
				c.ranges[i] = r
			}
			return
		}
	}
	if len(c.ranges) >= maxCachedRanges {
		c.ranges = c.ranges[1:]
	}
	c.ranges = append(c.ranges, r)
}

// wrote records the writes of a Txn that committed at rev: a put key
// holds its value at ModRevision rev, a deleted one is absent; a cached
// range holding one is dropped.
func (c *readCache) wrote(ws []write, rev int64) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, w := range ws {
		r := read{}
		if !w.deleted {
			r = read{value: w.value, present: true, modRev: rev}
		}
		c.learnLocked(string(w.key), r, rev)
		c.dropSpansLocked(w.key)
	}
}

// forget drops what t read or wrote: after a conflict or a commit of
// unknown outcome some of it is stale.
func (c *readCache) forget(t *txn) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range t.reads {
		delete(c.keys, k)
		c.dropSpansLocked([]byte(k))
	}
	if t.buf != nil {
		t.buf.Ascend(func(w write) bool {
			delete(c.keys, string(w.key))
			c.dropSpansLocked(w.key)
			return true
		})
	}
	for _, sp := range t.ranges {
		c.ranges = dropOverlapping(c.ranges, sp)
	}
	for _, r := range t.cached {
		c.ranges = dropOverlapping(c.ranges, span{start: r.start, end: r.end})
	}
}

func (c *readCache) dropSpansLocked(key []byte) {
	k := string(key)
	out := c.ranges[:0]
	for _, r := range c.ranges {
		if !inSpan(k, span{start: r.start, end: r.end}) {
			out = append(out, r)
		}
	}
	clear(c.ranges[len(out):])
	c.ranges = out
}

func dropOverlapping(rs []cachedRange, sp span) []cachedRange {
	out := rs[:0]
	for _, r := range rs {
		overlap := (sp.end == nil || bytes.Compare(r.start, sp.end) < 0) && (r.end == nil || bytes.Compare(sp.start, r.end) < 0)
		if !overlap {
			out = append(out, r)
		}
	}
	clear(rs[len(out):])
	return out
}
