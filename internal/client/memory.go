package client

import (
	"runtime/debug"
	"sync/atomic"
	"syscall"
	"time"

	"tessera/internal/meta"
)

// Memory: the client's caches are sized from the machine, and what an idle
// client holds goes back to the operating system.
//
// The memory block cache and the dirty budget default to a share of the
// machine's memory with a cap (DefaultMemCacheBytes, DefaultDirtyBytes): on
// a laptop of 4 GiB a mount takes 32 + 32 MiB, on 16 GiB and up 64 + 64
// MiB. The kernel's page cache keeps what a reader reads hot (the FUSE layer
// keeps it across opens), so the block cache mostly serves read-ahead and
// rereads of evicted pages, and need not grow with the machine. (The caps
// were 256 + 128 MiB: under fsx a mount's cache filled with versions of
// small files' blocks the page cache held anyway, and tessera up peaked at
// 528 MiB where 64 + 64 MiB gave 207 MiB and ran no slower:
// docs/design/2026-11-28-memory-bounds.md.)
//
// A client with no read or write for Config.IdleRelease (DefaultIdleRelease)
// empties its memory block cache, its free lists of write and fetch
// buffers and its hash trees, keeps the most recently used 1/16 of its
// segment sums' bound (idleSumsShare), and asks the Go runtime to return
// free memory to the system; the next reader fetches again (from the
// local disk cache or the servers).
//
// Besides the cache's bound, the free list of fetch buffers (bufpool.go)
// holds up to an eighth of it (at most 32 MiB): the memory of evicted
// blocks, which the next fetches read into. MemoryBound sums every bounded
// part; tessera up states the sum with its other roles' in -h and at start.

// MemoryBound is the most memory a client configured with cfg holds for
// file data, the sum of its parts' bounds (MemoryParts): the memory
// cache, the free fetch buffers, the dirty budget (written blocks from
// the write until every copy of their upload was tried), the free write
// buffers, the segment sums, the compositions and their hash trees, and the fetches under way
// (each holds one block until it lands in the cache; counted at the
// default block size: files made with larger blocks take more). What the
// client holds besides (per open file, per inode it caches) is small and
// bounded by the meta service's leases.
func MemoryBound(cfg Config) int64 {
	var n int64
	for _, p := range MemoryParts(cfg) {
		n += p.Bytes
	}
	return n
}

// MemoryPart is one bounded part of a client's memory.
type MemoryPart struct {
	Name  string
	Bytes int64
}

// MemoryParts lists the parts MemoryBound sums.
func MemoryParts(cfg Config) []MemoryPart {
	cfg.setDefaults()
	return []MemoryPart{
		{"memory cache", cfg.MemCacheBytes},
		{"free fetch buffers", defaultFetchPoolBytes(cfg.MemCacheBytes)},
		{"dirty blocks", cfg.DirtyBytes},
		{"free write buffers", writeFreeBytes(cfg.DirtyBytes)},
		{"segment sums", DefaultSegSumsBytes},
		{"compositions", compCacheBytes},
		{"block hash trees", treeCacheBytes},
		{"fetches under way", int64(cfg.Fetches) * (meta.DefaultBlockSize + hashSlack)},
	}
}

// writeFreeBytes bounds the free list of write buffers of a client with a
// dirty budget of dirty: a quarter of it, at most 16 default blocks.
func writeFreeBytes(dirty int64) int64 { return min(dirty/4, 16*meta.DefaultBlockSize) }

// DefaultIdleRelease is Config.IdleRelease's default: short enough that a
// mount left alone is back to its floor within half a minute.
const DefaultIdleRelease = 20 * time.Second

// machineMemory is the machine's RAM in bytes (0 if unknown).
func machineMemory() int64 {
	var si syscall.Sysinfo_t
	if err := syscall.Sysinfo(&si); err != nil {
		return 0
	}
	return int64(si.Totalram) * int64(si.Unit)
}

// DefaultMemCacheBytes is Config.MemCacheBytes's default on this machine:
// 1/256 of its memory, from 32 to 64 MiB.
func DefaultMemCacheBytes() int64 { return shareOfMemory(machineMemory(), 256, 32<<20, 64<<20) }

// DefaultDirtyBytes is Config.DirtyBytes's default on this machine: 1/256
// of its memory, from 32 to 64 MiB.
func DefaultDirtyBytes() int64 { return shareOfMemory(machineMemory(), 256, 32<<20, 64<<20) }

// defaultFetches is Config.Fetches's default for a memory cache of
// memBytes: a fetch holds a block until it lands in the cache, so as many
// as a quarter of the cache holds in default blocks, from 16 to 64.
func defaultFetches(memBytes int64) int {
	return int(min(max(memBytes/4/meta.DefaultBlockSize, 16), 64))
}

// shareOfMemory is total/div, within [lo, hi]; hi when total is unknown.
func shareOfMemory(total, div, lo, hi int64) int64 {
	if total <= 0 {
		return hi
	}
	return min(max(total/div, lo), hi)
}

// activity records when the client last served a read or a write.
type activity struct{ last atomic.Int64 }

func (a *activity) touch(now time.Time) { a.last.Store(now.UnixNano()) }

// releaseIdle runs until stop is closed: every tick, a client idle for
// idle or longer drops its cached blocks and spare buffers, once per idle
// period, and the runtime returns the freed memory.
func (c *Client) releaseIdle(idle time.Duration, stop <-chan struct{}) {
	tick := min(max(idle/4, 100*time.Millisecond), 15*time.Second)
	t := time.NewTicker(tick)
	defer t.Stop()
	var released int64 // activity stamp at the last release
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			last := c.active.last.Load()
			_, _, cached := c.mem.stats()
			// A read-ahead that was under way at the last use may fill the
			// cache after a release: released since the last use counts only
			// while the cache stayed empty.
			if (last == released && cached == 0) || last > now.Add(-idle).UnixNano() || c.budget.inUse() > 0 {
				continue // released since the last use, in use, or dirty
			}
			c.mem.clear()
			c.bufs.drain()
			c.pool.drain()
			c.trees.clear()
			c.sums.shrinkIdle()
			debug.FreeOSMemory()
			c.idleReleases.Add(1)
			released = last
		}
	}
}
