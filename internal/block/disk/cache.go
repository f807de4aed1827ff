package disk

import (
	"os"

	"golang.org/x/sys/unix"
)

// DefaultWriteCache is how many bytes of the blocks it wrote last a store
// leaves in the page cache (see the package doc, Page cache): enough for
// the reads that follow a write closely (another site's reader, the
// mover), small enough that the window fills, and its pages are reused,
// within a few writes.
const DefaultWriteCache = 64 << 20

// SetWriteCache sets how many bytes of the blocks it wrote last s leaves
// in the page cache (DefaultWriteCache until then; 0: none, every block's
// pages are dropped once it is durable). It applies from the next Put.
func (s *Store) SetWriteCache(bytes int64) {
	s.recent.Lock()
	defer s.recent.Unlock()
	s.recent.max = max(bytes, 0)
}

// written is the window of the blocks a store wrote last whose pages it
// leaves in the page cache, oldest first, at most max bytes.
type written struct {
	max   int64
	bytes int64
	files []writtenFile // a queue: files[0] is the oldest
}

type writtenFile struct {
	path string
	size int64
}

// add enters a block just installed at path in the window and returns the
// files that fall out of it, for dropFromCache.
func (w *written) add(path string, size int64) (out []string) {
	w.files = append(w.files, writtenFile{path, size})
	w.bytes += size
	n := 0
	for w.bytes > w.max && n < len(w.files) {
		out = append(out, w.files[n].path)
		w.bytes -= w.files[n].size
		n++
	}
	if n > 0 {
		clear(w.files[:n])
		w.files = w.files[n:]
		if cap(w.files) > 64 && len(w.files) < cap(w.files)/4 {
			w.files = append([]writtenFile(nil), w.files...) // let go of the drained front
		}
	}
	return out
}

// noteWritten enters the block installed at p in the store's window of
// recent writes and drops the pages of the blocks that fall out of it.
func (s *Store) noteWritten(p string, size int64) {
	s.recent.Lock()
	out := s.recent.add(p, size)
	s.recent.Unlock()
	for _, q := range out {
		dropFromCache(q)
	}
}

// dropFromCache asks the kernel to drop the (clean, synced) pages of file
// p. Advice only: a file since removed, or one the file system keeps, is
// no error.
func dropFromCache(p string) {
	f, err := os.Open(p)
	if err != nil {
		return
	}
	defer f.Close()
	_ = unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
}
