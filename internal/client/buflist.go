package client

import "sync"

// bufList is a bounded free list of write buffers of whole blocks: a file
// written sequentially reuses the buffers of blocks already uploaded
// instead of allocating (and zeroing, and faulting in fresh memory for) a
// buffer per block. Unlike a sync.Pool it survives garbage collections.
//
// It pools buffers of any block size: the capacities get was asked for
// that are at least minWritePooled (a file's whole blocks are asked for at its
// block size), at most maxSizes of them, and keeps at most maxBytes of
// free buffers in all. (It kept 4 MiB buffers only, the default block
// size: with 1 MiB blocks every block allocated a fresh buffer.)
type bufList struct {
	maxBytes int64

	mu    sync.Mutex
	free  map[int][][]byte // by capacity; a key for every size asked for
	bytes int64            // capacity of the free buffers
}

const (
	// minWritePooled is the smallest capacity pooled: smaller buffers are
	// small files' first blocks, which grow as they are written.
	minWritePooled = 256 << 10
	// maxSizes bounds the block sizes pooled at once.
	maxSizes = 8
)

func newBufList(maxBytes int64) *bufList {
	return &bufList{maxBytes: maxBytes, free: make(map[int][][]byte)}
}

// get returns an empty buffer of capacity c.
func (l *bufList) get(c int) []byte {
	if c >= minWritePooled {
		l.mu.Lock()
		fs, ok := l.free[c]
		if n := len(fs); n > 0 {
			b := fs[n-1]
			fs[n-1] = nil
			l.free[c] = fs[:n-1]
			l.bytes -= int64(c)
			l.mu.Unlock()
			return b[:0]
		}
		if !ok && len(l.free) < maxSizes {
			l.free[c] = nil // a size to keep from now on
		}
		l.mu.Unlock()
	}
	return make([]byte, 0, c)
}

// put gives b back; buffers of a capacity get was not asked for (grown
// by appends), or beyond the bound, are left to the garbage collector.
func (l *bufList) put(b []byte) {
	c := cap(b)
	l.mu.Lock()
	defer l.mu.Unlock()
	fs, ok := l.free[c]
	if !ok || l.bytes+int64(c) > l.maxBytes {
		return
	}
	l.free[c] = append(fs, b[:0])
	l.bytes += int64(c)
}

// drain drops the free buffers.
func (l *bufList) drain() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for c := range l.free {
		l.free[c] = nil
	}
	l.bytes = 0
}
