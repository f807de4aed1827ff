package pebblekv

import (
	"strings"
	"sync"

	"github.com/cockroachdb/pebble/vfs"
)

// deferredFS is the file system Pebble runs on when WAL fsyncs are
// deferred (Options.WALSyncEvery). Pebble writes a batch to its WAL file
// and then syncs the file before a synced commit returns; the WAL files
// this FS creates answer those syncs at once, so the commit returns once
// its bytes are in the operating system (a crash of the process loses
// nothing, a crash of the machine may). syncAll syncs them for real.
// Everything else (tables, the manifest, directories) syncs as Pebble asks.
type deferredFS struct {
	vfs.FS
	mu struct {
		sync.Mutex
		// files holds the open WAL files whose syncs were deferred since
		// their last real one.
		files map[*deferredFile]struct{}
		// failed is the first real sync's failure. It sticks: after a
		// failed fsync the kernel may have dropped the dirty pages, and a
		// later fsync that succeeds proves nothing about them.
		failed error
	}
}

func newDeferredFS(fs vfs.FS) *deferredFS {
	d := &deferredFS{FS: fs}
	d.mu.files = make(map[*deferredFile]struct{})
	return d
}

// isWAL tells a WAL file by its name (NNNNNN.log, pebble's fileTypeLog).
func isWAL(name string) bool { return strings.HasSuffix(name, ".log") }

func (d *deferredFS) wrap(name string, f vfs.File, err error) (vfs.File, error) {
	if err != nil || !isWAL(name) {
		return f, err
	}
	return &deferredFile{File: f, fs: d}, nil
}

// Create implements vfs.FS.
func (d *deferredFS) Create(name string) (vfs.File, error) {
	f, err := d.FS.Create(name)
	return d.wrap(name, f, err)
}

// ReuseForWrite implements vfs.FS (Pebble recycles old WAL files).
func (d *deferredFS) ReuseForWrite(oldname, newname string) (vfs.File, error) {
	f, err := d.FS.ReuseForWrite(oldname, newname)
	return d.wrap(newname, f, err)
}

// syncAll makes every byte written to the WAL files before it was called
// durable. It does not hold d.mu while it syncs, so Pebble's writes and
// deferred syncs go on meanwhile (and mark their files again).
func (d *deferredFS) syncAll() error {
	d.mu.Lock()
	if err := d.mu.failed; err != nil {
		d.mu.Unlock()
		return err
	}
	files := make([]*deferredFile, 0, len(d.mu.files))
	for f := range d.mu.files {
		files = append(files, f)
	}
	clear(d.mu.files)
	d.mu.Unlock()
	for _, f := range files {
		if err := f.syncNow(); err != nil {
			d.mu.Lock()
			if d.mu.failed == nil {
				d.mu.failed = err
			}
			err = d.mu.failed
			d.mu.Unlock()
			return err
		}
	}
	return nil
}

// pending reports whether a WAL file has a deferred sync.
func (d *deferredFS) pending() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.mu.files) > 0
}

// deferredFile is a WAL file whose syncs wait for deferredFS.syncAll.
type deferredFile struct {
	vfs.File
	fs *deferredFS
	// mu orders a real sync against Close.
	mu struct {
		sync.Mutex
		closed bool
	}
}

// defer1 marks f as holding bytes not yet durable.
func (f *deferredFile) defer1() {
	f.fs.mu.Lock()
	f.fs.mu.files[f] = struct{}{}
	f.fs.mu.Unlock()
}

// syncNow syncs f for real, unless it was closed (Close synced it).
func (f *deferredFile) syncNow() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.mu.closed {
		return nil
	}
	return f.File.SyncData()
}

// Sync implements vfs.File: deferred.
func (f *deferredFile) Sync() error { f.defer1(); return nil }

// SyncData implements vfs.File: deferred.
func (f *deferredFile) SyncData() error { f.defer1(); return nil }

// SyncTo implements vfs.File: deferred (a partial sync, as Pebble allows).
func (f *deferredFile) SyncTo(length int64) (bool, error) { f.defer1(); return false, nil }

// Close syncs for real before closing: a WAL file Pebble closes (on a
// switch to a new one, or at Close) is never synced by syncAll again.
func (f *deferredFile) Close() error {
	f.fs.mu.Lock()
	delete(f.fs.mu.files, f)
	f.fs.mu.Unlock()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mu.closed = true
	err := f.File.SyncData()
	if cerr := f.File.Close(); err == nil {
		err = cerr
	}
	return err
}

// syncGroup runs real syncs one at a time and lets callers share them: a
// caller is covered by any sync that started after it called.
type syncGroup struct {
	run sync.Mutex // held while a sync runs
	mu  struct {
		sync.Mutex
		started, finished uint64
		err               error // of the latest finished sync
	}
}

func (g *syncGroup) sync(fn func() error) error {
	g.mu.Lock()
	asked := g.mu.started
	g.mu.Unlock()
	g.run.Lock()
	defer g.run.Unlock()
	g.mu.Lock()
	if g.mu.finished > asked {
		// A sync that started after our call has finished: it covered us.
		err := g.mu.err
		g.mu.Unlock()
		return err
	}
	g.mu.started++
	n := g.mu.started
	g.mu.Unlock()
	err := fn()
	g.mu.Lock()
	g.mu.finished, g.mu.err = n, err
	g.mu.Unlock()
	return err
}
