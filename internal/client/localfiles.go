package client

import (
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"tessera/internal/block"
)

// blockFiler is implemented by stores whose blocks are files on this host
// (a co-located block server's directory): the client reads ranges of them
// directly and checks them against the segment sums.
type blockFiler interface {
	// OpenBlockFile opens h's file for reading; a missing file is an error
	// wrapping block.ErrNotFound.
	OpenBlockFile(h block.Hash) (*os.File, error)
}

const (
	// maxLocalFiles bounds the block files kept open (1 GiB of 4 MiB
	// blocks: a random reader over a file that size opens each once).
	maxLocalFiles = 256
	// localFileIdle: a block file not read for this long is closed (by
	// the sweep after, within half as long again), so that a block the
	// reclaimer removed gives its space back soon after its last reader.
	localFileIdle = 5 * time.Second
)

// localFiles keeps recently read block files on this host open, so that a
// small read is one pread: no path walk, open and close per read. The files
// are read only; their content is checked against the segment sums on every
// read, so a file changed or replaced since it was opened is caught like any
// changed copy. Bounded in files (the least recently read go first); sweep
// closes idle ones. A read marks its file with the sweeper's tick, under a
// read lock: no clock reading and no list reordering per read.
type localFiles struct {
	tick atomic.Int64 // advanced by every sweep
	mu   struct {
		sync.RWMutex
		items map[block.Hash]*localFile
	}
}

type localFile struct {
	f    *os.File
	used atomic.Int64 // tick of the last read
}

func newLocalFiles() *localFiles {
	l := &localFiles{}
	l.mu.items = make(map[block.Hash]*localFile)
	return l
}

func (l *localFiles) get(h block.Hash) *os.File {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if lf, ok := l.mu.items[h]; ok {
		lf.used.Store(l.tick.Load())
		return lf.f
	}
	return nil
}

// add keeps f open as h's file and returns the file to read, which is one
// kept already if a concurrent reader added it first (f is then closed).
func (l *localFiles) add(h block.Hash, f *os.File) *os.File {
	var evict []*os.File
	l.mu.Lock()
	if lf, ok := l.mu.items[h]; ok {
		lf.used.Store(l.tick.Load())
		l.mu.Unlock()
		f.Close()
		return lf.f
	}
	lf := &localFile{f: f}
	lf.used.Store(l.tick.Load())
	l.mu.items[h] = lf
	if len(l.mu.items) > maxLocalFiles {
		// Close the least recently read quarter, so that a reader going
		// over more blocks than the bound scans once per maxLocalFiles/4
		// opens.
		old := leastRecent(l.mu.items, h, func(lf *localFile) int64 { return lf.used.Load() })
		for _, k := range old[:len(l.mu.items)-maxLocalFiles*3/4] {
			evict = append(evict, l.mu.items[k].f)
			delete(l.mu.items, k)
		}
	}
	l.mu.Unlock()
	closeAll(evict)
	return f
}

// drop closes h's file if it is kept, e.g. when its content no longer
// matched (a repaired copy is a new file at the same path).
func (l *localFiles) drop(h block.Hash) {
	l.mu.Lock()
	lf, ok := l.mu.items[h]
	delete(l.mu.items, h)
	l.mu.Unlock()
	if ok {
		lf.f.Close()
	}
}

// sweep closes the files not read in the last two ticks, and starts a new
// tick.
func (l *localFiles) sweep() {
	var evict []*os.File
	l.mu.Lock()
	idle := l.tick.Load() - 2
	for h, lf := range l.mu.items {
		if lf.used.Load() <= idle {
			evict = append(evict, lf.f)
			delete(l.mu.items, h)
		}
	}
	l.tick.Add(1)
	l.mu.Unlock()
	closeAll(evict)
}

// closeAll closes every kept file.
func (l *localFiles) closeAll() {
	l.mu.Lock()
	var fs []*os.File
	for _, lf := range l.mu.items {
		fs = append(fs, lf.f)
	}
	clear(l.mu.items)
	l.mu.Unlock()
	closeAll(fs)
}

func (l *localFiles) len() int {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return len(l.mu.items)
}

// A file closed while another reader has it is still read to the end by a
// pread already under way (os.File counts its users); one started after
// fails with os.ErrClosed, and the reader opens the file again.
func closeAll(fs []*os.File) {
	for _, f := range fs {
		f.Close()
	}
}

// sweepLocalFiles runs until stop is closed, closing block files idle for
// localFileIdle (two sweep periods, closed within a third).
func (c *Client) sweepLocalFiles(stop <-chan struct{}) {
	t := time.NewTicker(localFileIdle / 2)
	defer t.Stop()
	for {
		select {
		case <-stop:
			c.files.closeAll()
			return
		case <-t.C:
			c.files.sweep()
		}
	}
}

// openLocal opens a copy of h on this host: a co-located block server's
// file, else the disk cache's.
func (c *Client) openLocal(h block.Hash) (*os.File, bool) {
	for _, s := range c.router.ranked(h) {
		if bf, ok := s.st.(blockFiler); ok {
			if f, err := bf.OpenBlockFile(h); err == nil {
				return f, true
			}
		}
	}
	if c.disk != nil {
		if f, err := c.disk.openFile(h); err == nil {
			return f, true
		}
	}
	return nil, false
}

// preadLocal fills buf from offset off of a copy of h on this host,
// unverified. It reports false when there is no such copy or it is shorter.
func (c *Client) preadLocal(h block.Hash, buf []byte, off int64) bool {
	for try := 0; try < 2; try++ {
		f := c.files.get(h)
		if f == nil {
			nf, ok := c.openLocal(h)
			if !ok {
				return false
			}
			f = c.files.add(h, nf)
		}
		_, err := f.ReadAt(buf, off)
		if err == nil {
			return true
		}
		c.files.drop(h)
		if !errors.Is(err, os.ErrClosed) {
			return false
		}
		// Closed by an eviction between get and ReadAt: open it again.
	}
	return false
}

// adviseLocal asks the kernel to read a copy of h on this host into its page
// cache (read-ahead of a block whose segment sums are known: the reader's
// preads then find it there). It reports false when there is no such copy.
func (c *Client) adviseLocal(h block.Hash, size int64) bool {
	f := c.files.get(h)
	if f == nil {
		nf, ok := c.openLocal(h)
		if !ok {
			return false
		}
		f = c.files.add(h, nf)
	}
	sc, err := f.SyscallConn()
	if err != nil {
		return false
	}
	var aerr error
	if err := sc.Control(func(fd uintptr) {
		aerr = unix.Fadvise(int(fd), 0, size, unix.FADV_WILLNEED)
	}); err != nil {
		return false
	}
	return aerr == nil
}
