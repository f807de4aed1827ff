package pebblekv

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/bloom"
	"github.com/cockroachdb/pebble/vfs"

	"tessera/internal/kv"
	"tessera/internal/kv/kvlocal"
)

var (
	_ kv.Store  = (*Store)(nil)
	_ kv.Syncer = (*Store)(nil)
)

// Options tunes a Store. The zero value is a sound default.
type Options struct {
	// PipelinedSync lets the next Update run while this one waits for its
	// WAL fsync, so that concurrent Updates share fsyncs. See the package
	// comment.
	PipelinedSync bool
	// WALSyncEvery, when positive, defers WAL fsyncs: an Update returns
	// once its batch is written to the WAL file (it survives a crash of
	// the process, not of the machine), Sync makes every Update that
	// returned before it durable (concurrent Syncs share one fsync), and
	// a background sync runs every WALSyncEvery while some are pending.
	// Zero: every Update is durable when it returns. See the package
	// comment.
	WALSyncEvery time.Duration
	// Logger receives Pebble's messages; nil discards its informational
	// ones and sends fatal ones to pebble.DefaultLogger.
	Logger pebble.Logger
	// CacheBytes sizes the block cache (decompressed table blocks, shared
	// by every read); 0: Pebble's default, 8 MiB.
	CacheBytes int64
}

// Store is a kv.Store in one Pebble directory.
type Store struct {
	db        *pebble.DB
	dir       string
	pipelined bool

	// wal defers WAL fsyncs (nil unless Options.WALSyncEvery); syncs
	// groups Sync's callers; stop and stopped end the background syncer.
	wal      *deferredFS
	syncs    syncGroup
	stop     chan struct{}
	stopOnce sync.Once
	stopped  chan struct{}

	// feed and elector are the in-process kv.Watcher and kv.Elector
	// (feed.go).
	feed    kvlocal.Feed
	elector kvlocal.Elector

	// writer is a one-slot semaphore held by the running Update. It is a
	// channel rather than a mutex so that waiting for it honours the context.
	writer chan struct{}

	// mu is held shared by every transaction and exclusively by Close, so that
	// Close waits for transactions in flight and later ones see closed.
	// Lock order: mu, then writer.
	mu struct {
		sync.RWMutex
		closed bool
	}
}

// quietLogger drops Pebble's informational messages.
type quietLogger struct{}

func (quietLogger) Infof(string, ...any) {}
func (quietLogger) Fatalf(format string, args ...any) {
	pebble.DefaultLogger.Fatalf(format, args...)
}

// Open opens or creates the store in dir.
func Open(dir string, opts Options) (*Store, error) {
	var wal *deferredFS
	if opts.WALSyncEvery > 0 {
		wal = newDeferredFS(vfs.Default)
	}
	return open(dir, opts, wal)
}

// open is Open with the deferring file system (nil: syncs as Pebble asks).
func open(dir string, opts Options, wal *deferredFS) (*Store, error) {
	logger := opts.Logger
	if logger == nil {
		logger = quietLogger{}
	}
	popts := &pebble.Options{
		FormatMajorVersion: pebble.FormatNewest,
		Logger:             logger,
	}
	// Bloom filters on every level: a lookup of an absent key (the
	// dentry of a file about to be created, the recipe of an inline
	// file) is answered without reading a data block of each table that
	// could hold it.
	//
	// No compression: a block the cache misses (tables a compaction just
	// wrote, a working set past CacheBytes) is read and checksummed, not
	// snappy-decoded too. The decoding was 57% of the block loads and
	// 17% of the daemon's CPU in an rm -rf of Go's src (issue 28); the
	// meta store is small beside the data it describes. Tables written
	// compressed before stay readable (the codec is per block).
	popts.Levels = make([]pebble.LevelOptions, 7)
	for i := range popts.Levels {
		popts.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
		popts.Levels[i].Compression = pebble.NoCompression
	}
	if wal != nil {
		popts.FS = wal
	}
	if opts.CacheBytes > 0 {
		cache := pebble.NewCache(opts.CacheBytes)
		defer cache.Unref() // the DB holds its own reference
		popts.Cache = cache
	}
	db, err := pebble.Open(dir, popts)
	if err != nil {
		return nil, fmt.Errorf("pebblekv: open %s: %w", dir, err)
	}
	s := &Store{
		db:        db,
		dir:       dir,
		pipelined: opts.PipelinedSync,
		writer:    make(chan struct{}, 1),
		wal:       wal,
	}
	if wal != nil && opts.WALSyncEvery > 0 {
		s.stop, s.stopped = make(chan struct{}), make(chan struct{})
		go s.syncLoop(opts.WALSyncEvery)
	}
	return s, nil
}

// CacheStats reports the block cache: the bytes it holds, and the hits
// and misses of the reads since the store was opened.
func (s *Store) CacheStats() (bytes, hits, misses int64) {
	m := s.db.Metrics().BlockCache
	return m.Size, m.Hits, m.Misses
}

// Sync implements kv.Syncer: every Update that returned before the call is
// durable when it returns nil.
func (s *Store) Sync(ctx context.Context) error {
	if err := s.enter(ctx); err != nil {
		return fmt.Errorf("pebblekv: sync %s: %w", s.dir, err)
	}
	defer s.mu.RUnlock()
	if s.wal == nil {
		return nil // every Update synced before it returned
	}
	if err := s.syncs.sync(s.wal.syncAll); err != nil {
		return fmt.Errorf("pebblekv: sync %s: %w", s.dir, err)
	}
	return nil
}

// syncLoop bounds how long a deferred sync waits: what a crash of the
// machine may lose.
func (s *Store) syncLoop(every time.Duration) {
	defer close(s.stopped)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			if s.wal.pending() {
				// A failure is kept and returned by every later
				// Sync (syncAll).
				_ = s.Sync(context.Background())
			}
		}
	}
}

// View implements kv.Store.
func (s *Store) View(ctx context.Context, fn func(tx kv.Txn) error) error {
	if err := s.enter(ctx); err != nil {
		return fmt.Errorf("pebblekv: view %s: %w", s.dir, err)
	}
	defer s.mu.RUnlock()
	snap := s.db.NewSnapshot()
	defer snap.Close()
	t := &txn{r: snap}
	defer t.finish()
	return fn(t)
}

// Update implements kv.Store.
func (s *Store) Update(ctx context.Context, fn func(tx kv.Txn) error) error {
	if err := s.enter(ctx); err != nil {
		return fmt.Errorf("pebblekv: update %s: %w", s.dir, err)
	}
	defer s.mu.RUnlock()
	select {
	case s.writer <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("pebblekv: update %s: %w", s.dir, ctx.Err())
	}
	release := sync.OnceFunc(func() { <-s.writer })
	defer release()

	b := s.db.NewIndexedBatch()
	t := &txn{r: b, w: b}
	err := fn(t)
	t.finish()
	if err != nil || b.Empty() {
		b.Close()
		return err
	}
	changes, err := s.changes(b)
	if err != nil {
		b.Close()
		return err
	}
	if !s.pipelined {
		err = b.Commit(pebble.Sync)
		if err == nil {
			s.feed.Publish(changes)
		}
		release()
	} else if err = s.db.ApplyNoSyncWait(b, pebble.Sync); err == nil {
		// The batch is visible: the next Update may read it and commit
		// behind it in the log while this one waits for the fsync. It is
		// published in commit order, like the visible state.
		s.feed.Publish(changes)
		release()
		err = b.SyncWait()
	}
	if cerr := b.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("pebblekv: update %s: commit: %w", s.dir, err)
	}
	return nil
}

// enter checks ctx and takes mu shared; the caller releases it.
func (s *Store) enter(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.RLock()
	if s.mu.closed {
		s.mu.RUnlock()
		return kv.ErrClosed
	}
	return nil
}

// Close implements kv.Store. It waits for transactions in flight.
func (s *Store) Close() error {
	s.feed.Close()
	s.elector.Close()
	if s.stop != nil {
		s.stopOnce.Do(func() { close(s.stop) })
		<-s.stopped
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.closed {
		return nil
	}
	s.mu.closed = true
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("pebblekv: close %s: %w", s.dir, err)
	}
	return nil
}

// errDone reports use of a transaction after its function returned.
var errDone = errors.New("pebblekv: transaction used after its function returned")
