package home

import (
	"errors"
	"io/fs"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Temporary files of a file:// home. WriteFile writes beside its target
// and renames over it; a gateway killed in between (kill -9, a crash)
// leaves the temporary file behind. ReadDir never lists them, but they take
// space and show in the home directory, so the next WriteFile into the
// same directory (after each start, once per directory) removes the
// leftovers.
//
// A leftover is told from a write in progress, of this process or of
// another gateway sharing the home, by a lock: a writer holds an exclusive
// flock on its temporary file until it is renamed, and the kernel lets go
// of it when the writer dies however it dies. A file is removed only if its
// lock can be taken and it is older than tmpGrace, which covers the moment
// between creating the file and locking it. (flock on NFS is carried as a
// byte-range lock by Linux clients since 2.6.12.)

// tmpGrace is how old a temporary file must be before a sweep looks at it.
const tmpGrace = time.Minute

// maxSwept bounds the set of swept directories; past it the set starts
// over (a directory swept twice costs a listing, nothing else).
const maxSwept = 1 << 16

// sweeper remembers which directories were swept since the store opened.
type sweeper struct {
	mu    sync.Mutex
	swept map[string]bool
}

// first reports whether dir has not been swept yet, and marks it swept.
func (w *sweeper) first(dir string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.swept == nil || len(w.swept) >= maxSwept {
		w.swept = map[string]bool{}
	}
	if w.swept[dir] {
		return false
	}
	w.swept[dir] = true
	return true
}

// lockTmp takes the exclusive lock a writer holds on its temporary file.
func lockTmp(f *os.File, wait bool) error {
	how := syscall.LOCK_EX
	if !wait {
		how |= syscall.LOCK_NB
	}
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// sweepTmp removes the temporary files in home directory dir ("" for the
// root) left by writers that died, once per directory per store. Errors
// are ignored: a leftover that cannot be removed now is tried again after
// the next start.
func (s *FileStore) sweepTmp(dir string) {
	if !s.sweep.first(dir) {
		return
	}
	d, err := s.root.Open(rel(dir))
	if err != nil {
		return
	}
	defer d.Close()
	for {
		ents, err := d.ReadDir(1024)
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), tmpPrefix) && e.Type().IsRegular() {
				s.removeStale(join(dir, e.Name()), time.Now())
			}
		}
		if err != nil || len(ents) == 0 {
			return
		}
	}
}

// removeStale removes temporary file p if it is older than tmpGrace and no
// writer holds its lock.
func (s *FileStore) removeStale(p string, now time.Time) {
	fi, err := s.root.Lstat(p)
	if err != nil || !fi.Mode().IsRegular() || now.Sub(fi.ModTime()) < tmpGrace {
		return
	}
	f, err := s.root.OpenFile(p, os.O_RDONLY, 0)
	if err != nil {
		return
	}
	defer f.Close()
	if lockTmp(f, false) != nil {
		return // a writer is alive and holds it
	}
	// Still the same file (not renamed over and replaced meanwhile)?
	if again, err := s.root.Lstat(p); err == nil && os.SameFile(fi, again) {
		if err := s.root.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return
		}
	}
}
