package client

import (
	"container/list"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"tessera/internal/block"
)

// diskCache keeps fetched blocks as files under a directory, bounded in
// bytes, evicting the least recently used. Files are written to a temporary
// name and renamed, and verified against their hash when read back: a torn
// or corrupted cache file is dropped and the block fetched again. Writes are
// handed to one background goroutine through a bounded queue; when the queue
// is full the block is simply not cached.
type diskCache struct {
	dir   string
	max   int64
	log   *slog.Logger
	queue chan diskWrite
	done  chan struct{}
	// hits and misses count get's answers (Client.Stats).
	hits, misses atomic.Uint64
	mu           struct {
		sync.Mutex
		used  int64
		ll    *list.List // front = most recent; values are *diskEntry
		items map[block.Hash]*list.Element
	}
}

type diskEntry struct {
	h    block.Hash
	size int64
}

// openDiskCache indexes what dir already holds and starts the writer.
func openDiskCache(dir string, maxBytes int64, log *slog.Logger) (*diskCache, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("disk cache %s: %w", dir, err)
	}
	c := &diskCache{dir: dir, max: maxBytes, log: log, queue: make(chan diskWrite, 16), done: make(chan struct{})}
	c.mu.ll = list.New()
	c.mu.items = make(map[block.Hash]*list.Element)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		h, perr := block.ParseHash(d.Name())
		if perr != nil {
			os.Remove(p) // a temporary file left by a crash
			return nil
		}
		info, ierr := d.Info()
		if ierr != nil {
			return nil
		}
		c.mu.items[h] = c.mu.ll.PushBack(&diskEntry{h: h, size: info.Size()})
		c.mu.used += info.Size()
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("disk cache %s: %w", dir, err)
	}
	go c.writer()
	return c, nil
}

func (c *diskCache) path(h block.Hash) string {
	s := h.String()
	return filepath.Join(c.dir, s[:2], s)
}

// get returns the cached block, verified, or false.
func (c *diskCache) get(h block.Hash) ([]byte, bool) {
	c.mu.Lock()
	e, ok := c.mu.items[h]
	if ok {
		c.mu.ll.MoveToFront(e)
	}
	c.mu.Unlock()
	if !ok {
		c.misses.Add(1)
		return nil, false
	}
	data, err := os.ReadFile(c.path(h))
	if err != nil || block.Sum(data) != h {
		c.log.Warn("disk cache: dropping unreadable or corrupt entry", "block", h.String(), "file", c.path(h), "err", err)
		c.remove(h)
		c.misses.Add(1)
		return nil, false
	}
	c.hits.Add(1)
	return data, true
}

// openFile opens a cached block's file for reading, unverified.
func (c *diskCache) openFile(h block.Hash) (*os.File, error) {
	c.mu.Lock()
	_, ok := c.mu.items[h]
	c.mu.Unlock()
	if !ok {
		return nil, os.ErrNotExist
	}
	return os.Open(c.path(h))
}

// diskWrite is a block queued for the disk cache's writer.
type diskWrite struct {
	h    block.Hash
	data []byte
}

// put queues data to be written as block h; it never blocks. It reports
// whether it was queued: the writer then holds data until written, so it must not change.
func (c *diskCache) put(h block.Hash, data []byte) bool {
	c.mu.Lock()
	_, ok := c.mu.items[h]
	c.mu.Unlock()
	if ok || int64(len(data)) > c.max {
		return false
	}
	select {
	case c.queue <- diskWrite{h: h, data: data}:
		return true
	default:
		return false
	}
}

func (c *diskCache) writer() {
	defer close(c.done)
	for e := range c.queue {
		if err := c.write(e.h, e.data); err != nil {
			c.log.Warn("disk cache: write failed", "block", e.h.String(), "err", err)
		}
	}
}

func (c *diskCache) write(h block.Hash, data []byte) error {
	p := c.path(h)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), ".tmp-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), p); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	c.mu.Lock()
	if _, ok := c.mu.items[h]; !ok {
		c.mu.items[h] = c.mu.ll.PushFront(&diskEntry{h: h, size: int64(len(data))})
		c.mu.used += int64(len(data))
	}
	var evict []block.Hash
	for c.mu.used > c.max {
		b := c.mu.ll.Back()
		ent := b.Value.(*diskEntry)
		c.mu.ll.Remove(b)
		delete(c.mu.items, ent.h)
		c.mu.used -= ent.size
		evict = append(evict, ent.h)
	}
	c.mu.Unlock()
	for _, e := range evict {
		os.Remove(c.path(e))
	}
	return nil
}

func (c *diskCache) remove(h block.Hash) {
	c.mu.Lock()
	if e, ok := c.mu.items[h]; ok {
		c.mu.ll.Remove(e)
		delete(c.mu.items, h)
		c.mu.used -= e.Value.(*diskEntry).size
	}
	c.mu.Unlock()
	os.Remove(c.path(h))
}

// close stops the writer after it drained the queue.
func (c *diskCache) close() {
	close(c.queue)
	<-c.done
}
