package pebblekv

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/cockroachdb/pebble"

	"tessera/internal/kv"
)

var _ kv.Store = (*Store)(nil)

// Options tunes a Store. The zero value is a sound default.
type Options struct {
	// PipelinedSync lets the next Update run while this one waits for its
	// WAL fsync, so that concurrent Updates share fsyncs. See the package
	// comment.
	PipelinedSync bool
	// Logger receives Pebble's messages; nil discards its informational
	// ones and sends fatal ones to pebble.DefaultLogger.
	Logger pebble.Logger
}

// Store is a kv.Store in one Pebble directory.
type Store struct {
	db        *pebble.DB
	dir       string
	pipelined bool

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
	logger := opts.Logger
	if logger == nil {
		logger = quietLogger{}
	}
	db, err := pebble.Open(dir, &pebble.Options{
		FormatMajorVersion: pebble.FormatNewest,
		Logger:             logger,
	})
	if err != nil {
		return nil, fmt.Errorf("pebblekv: open %s: %w", dir, err)
	}
	return &Store{
		db:        db,
		dir:       dir,
		pipelined: opts.PipelinedSync,
		writer:    make(chan struct{}, 1),
	}, nil
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
	if !s.pipelined {
		err = b.Commit(pebble.Sync)
		release()
	} else if err = s.db.ApplyNoSyncWait(b, pebble.Sync); err == nil {
		// The batch is visible: the next Update may read it and commit
		// behind it in the log while this one waits for the fsync.
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
