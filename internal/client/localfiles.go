package client

import (
	"container/list"
	"errors"
	"os"
	"sync"
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
	// localFileIdle: a block file not read for this long is closed, so that
	// a block the reclaimer removed gives its space back soon after its
	// last reader.
	localFileIdle = 5 * time.Second
)

// localFiles keeps recently read block files on this host open, so that a
// small read is one pread: no path walk, open and close per read. The files
// are read only; their content is checked against the segment sums on every
// read, so a file changed or replaced since it was opened is caught like any
// changed copy. An LRU bounded in files; idle ones are closed by sweep.
type localFiles struct {
	mu struct {
		sync.Mutex
		ll    *list.List // front = most recent; values are *localFile
		items map[block.Hash]*list.Element
	}
}

type localFile struct {
	h    block.Hash
	f    *os.File
	used time.Time
}

func newLocalFiles() *localFiles {
	l := &localFiles{}
	l.mu.ll = list.New()
	l.mu.items = make(map[block.Hash]*list.Element)
	return l
}

func (l *localFiles) get(h block.Hash) *os.File {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e, ok := l.mu.items[h]; ok {
		l.mu.ll.MoveToFront(e)
		lf := e.Value.(*localFile)
		lf.used = time.Now()
		return lf.f
	}
	return nil
}

// add keeps f open as h's file and returns the file to read, which is one
// kept already if a concurrent reader added it first (f is then closed).
func (l *localFiles) add(h block.Hash, f *os.File) *os.File {
	var evict []*os.File
	l.mu.Lock()
	if e, ok := l.mu.items[h]; ok {
		l.mu.ll.MoveToFront(e)
		kept := e.Value.(*localFile).f
		l.mu.Unlock()
		f.Close()
		return kept
	}
	l.mu.items[h] = l.mu.ll.PushFront(&localFile{h: h, f: f, used: time.Now()})
	for l.mu.ll.Len() > maxLocalFiles {
		evict = append(evict, l.removeLocked(l.mu.ll.Back()))
	}
	l.mu.Unlock()
	closeAll(evict)
	return f
}

// drop closes h's file if it is kept, e.g. when its content no longer
// matched (a repaired copy is a new file at the same path).
func (l *localFiles) drop(h block.Hash) {
	l.mu.Lock()
	e, ok := l.mu.items[h]
	var f *os.File
	if ok {
		f = l.removeLocked(e)
	}
	l.mu.Unlock()
	if f != nil {
		f.Close()
	}
}

// sweep closes the files not read since before.
func (l *localFiles) sweep(before time.Time) {
	var evict []*os.File
	l.mu.Lock()
	for e := l.mu.ll.Back(); e != nil && e.Value.(*localFile).used.Before(before); e = l.mu.ll.Back() {
		evict = append(evict, l.removeLocked(e))
	}
	l.mu.Unlock()
	closeAll(evict)
}

// closeAll closes every kept file.
func (l *localFiles) closeAll() { l.sweep(time.Now().Add(time.Hour)) }

func (l *localFiles) removeLocked(e *list.Element) *os.File {
	lf := e.Value.(*localFile)
	l.mu.ll.Remove(e)
	delete(l.mu.items, lf.h)
	return lf.f
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
// localFileIdle.
func (c *Client) sweepLocalFiles(stop <-chan struct{}) {
	t := time.NewTicker(localFileIdle / 2)
	defer t.Stop()
	for {
		select {
		case <-stop:
			c.files.closeAll()
			return
		case now := <-t.C:
			c.files.sweep(now.Add(-localFileIdle))
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
