package client

import (
	"context"
	"sync"
	"sync/atomic"

	"tessera/internal/block"
)

// Fetch buffers: a block fetched from a block server is read into memory
// of a block the memory cache evicted, instead of fresh memory.
//
// Fresh memory costs the kernel a page fault per 4 KiB page (a 16 MiB read
// took ~4100, 10-40 ms of system time) and the Go heap grows to half again
// the cache's size before a collection frees what the cache evicted. A
// sequential reader fills the cache and from then on evicts a block for
// every block it fetches, so the evicted block's memory is what the next
// fetch needs.
//
// A buffer is reused only when nothing can still read it. Every holder of
// a blockBuf counts as a reference: the memory cache while the block is
// in it, the fetch that filled it until it hands it on, every waiter of
// that fetch, every reader copying out of it (readRange). The last release
// gives the memory to the fetchPool. A block handed to code that keeps its
// bytes without counting (getBlock's callers, the disk cache's writer, a
// repair) is pinned and never reused: the garbage collector frees it, as
// before. So are blocks whose memory is not the client's alone (a store's
// own copy, a write buffer).

// blockBuf is a verified block's bytes with a count of their holders.
type blockBuf struct {
	data   []byte
	refs   atomic.Int32
	pinned atomic.Bool // never given to the pool
	pool   *fetchPool  // nil: never pooled
}

// newBlockBuf returns data with one reference (the caller's). own says
// that the client alone holds data, so that it may be reused once
// released; otherwise it is pinned.
func newBlockBuf(data []byte, own bool, pool *fetchPool) *blockBuf {
	b := &blockBuf{data: data, pool: pool}
	b.refs.Store(1)
	b.pinned.Store(!own || pool == nil)
	return b
}

// ref adds a reference; the caller must hold one already, or hold the
// lock of a holder that does (the memory cache's).
func (b *blockBuf) ref() { b.refs.Add(1) }

// release drops a reference; the last one gives an unpinned buffer to the
// pool.
func (b *blockBuf) release() {
	switch n := b.refs.Add(-1); {
	case n < 0:
		panic("client: blockBuf released more often than referenced")
	case n == 0 && !b.pinned.Load():
		b.pool.put(b.data)
	}
}

// keep pins b (its bytes are kept by a holder that does not count) and
// returns them; the caller must hold a reference.
func (b *blockBuf) keep() []byte {
	b.pinned.Store(true)
	return b.data
}

// fetchPool is a bounded free list of fetch buffers, newest first. A
// buffer is taken only for a block of exactly its size (its capacity less
// the hasher's slack), so the memory cache, which counts blocks by their
// length, stays within its bound; the oldest are dropped beyond max bytes.
type fetchPool struct {
	max int64
	mu  struct {
		sync.Mutex
		free  [][]byte
		bytes int64
	}
	reused, fresh atomic.Uint64
}

// hashSlack is the capacity past a block's end that spares block.Sum's
// hasher a copy of its tail (as the block client allocates).
const hashSlack = 16 << 10

// minFetchPooled is the smallest buffer kept: below it, allocating is cheap.
const minFetchPooled = 64 << 10

func newFetchPool(maxBytes int64) *fetchPool { return &fetchPool{max: maxBytes} }

// defaultFetchPoolBytes bounds the pool of a memory cache of memBytes: an
// eighth of it, at most 32 MiB (the fetches in flight at once take a few
// blocks each).
func defaultFetchPoolBytes(memBytes int64) int64 { return min(memBytes/8, 32<<20) }

// get returns a buffer of length n from the pool, or nil.
func (p *fetchPool) get(n int) []byte {
	want := n + hashSlack
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := len(p.mu.free) - 1; i >= 0; i-- {
		if b := p.mu.free[i]; cap(b) == want {
			p.mu.free = append(p.mu.free[:i], p.mu.free[i+1:]...)
			p.mu.bytes -= int64(cap(b))
			p.reused.Add(1)
			return b[:n]
		}
	}
	p.fresh.Add(1)
	return nil
}

// put gives b to the pool; nobody may hold it any more.
func (p *fetchPool) put(b []byte) {
	c := int64(cap(b))
	if c < minFetchPooled || c > p.max {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mu.free = append(p.mu.free, b[:0])
	p.mu.bytes += c
	drop := 0
	for p.mu.bytes > p.max {
		p.mu.bytes -= int64(cap(p.mu.free[drop]))
		p.mu.free[drop] = nil
		drop++
	}
	p.mu.free = p.mu.free[drop:]
}

// drain drops every free buffer (an idle client gives its memory back).
func (p *fetchPool) drain() {
	p.mu.Lock()
	defer p.mu.Unlock()
	clear(p.mu.free)
	p.mu.free, p.mu.bytes = nil, 0
}

// allocGetter is a block.Store that reads a block into a buffer of the
// caller's (block/client.Client.GetAlloc): the result is the caller's
// alone.
type allocGetter interface {
	GetAlloc(ctx context.Context, h block.Hash, alloc func(n int) []byte) ([]byte, error)
}
