package boltkv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"tessera/internal/kv"
)

var _ kv.Store = (*Store)(nil)

// DefaultLockTimeout is how long Open waits for another process's file lock
// when Options.LockTimeout is zero.
const DefaultLockTimeout = time.Second

// bucket holds every key.
var bucket = []byte("kv")

// Options tunes a Store. The zero value is a sound default.
type Options struct {
	// LockTimeout bounds the wait for the file lock; zero means
	// DefaultLockTimeout.
	LockTimeout time.Duration
	// Batch groups Updates from concurrent goroutines into one bbolt
	// transaction and one commit. It raises throughput under concurrency and
	// adds up to MaxBatchDelay of latency to every Update.
	Batch bool
	// MaxBatchDelay is how long a group waits for more Updates before it
	// commits; zero means bbolt's default (10ms).
	MaxBatchDelay time.Duration
	// MaxBatchSize commits a group as soon as it holds this many Updates;
	// zero means bbolt's default (1000).
	MaxBatchSize int
	// InitialMmapSize is the size of the first memory mapping; zero means
	// DefaultInitialMmapSize. A commit that outgrows the mapping waits for
	// every open View before it maps the file again, so a generous size keeps
	// writers from waiting on long readers. It costs address space only.
	InitialMmapSize int
}

// DefaultInitialMmapSize is the first mapping's size when
// Options.InitialMmapSize is zero.
const DefaultInitialMmapSize = 1 << 30

// Store is a kv.Store in one bbolt file.
type Store struct {
	db    *bolt.DB
	path  string
	batch bool

	// mu is held shared by every transaction and exclusively by Close, so that
	// Close waits for transactions in flight and later ones see closed.
	mu struct {
		sync.RWMutex
		closed bool
	}
}

// Open opens or creates the store at path, creating its directory if needed.
func Open(path string, opts Options) (*Store, error) {
	timeout := opts.LockTimeout
	if timeout == 0 {
		timeout = DefaultLockTimeout
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("boltkv: open %s: %w", path, err)
	}
	mmapSize := opts.InitialMmapSize
	if mmapSize == 0 {
		mmapSize = DefaultInitialMmapSize
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: timeout, InitialMmapSize: mmapSize})
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, fmt.Errorf("boltkv: open %s: file locked by another process (waited %v): %w", path, timeout, err)
	}
	if err != nil {
		return nil, fmt.Errorf("boltkv: open %s: %w", path, err)
	}
	if opts.MaxBatchDelay > 0 {
		db.MaxBatchDelay = opts.MaxBatchDelay
	}
	if opts.MaxBatchSize > 0 {
		db.MaxBatchSize = opts.MaxBatchSize
	}
	err = db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(bucket)
		return err
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("boltkv: open %s: create bucket: %w", path, err)
	}
	return &Store{db: db, path: path, batch: opts.Batch}, nil
}

// fnError carries fn's own error through bbolt, so that it is returned as is
// while bbolt's errors get context.
type fnError struct{ err error }

func (e fnError) Error() string { return e.err.Error() }

// View implements kv.Store.
func (s *Store) View(ctx context.Context, fn func(tx kv.Txn) error) error {
	if err := s.enter(ctx); err != nil {
		return fmt.Errorf("boltkv: view %s: %w", s.path, err)
	}
	defer s.mu.RUnlock()
	err := s.db.View(func(tx *bolt.Tx) error {
		return run(tx, false, fn)
	})
	return s.result("view", err)
}

// Update implements kv.Store.
func (s *Store) Update(ctx context.Context, fn func(tx kv.Txn) error) error {
	if err := s.enter(ctx); err != nil {
		return fmt.Errorf("boltkv: update %s: %w", s.path, err)
	}
	defer s.mu.RUnlock()
	commit := s.db.Update
	if s.batch {
		commit = s.db.Batch
	}
	err := commit(func(tx *bolt.Tx) error {
		return run(tx, true, fn)
	})
	return s.result("update", err)
}

func run(tx *bolt.Tx, writable bool, fn func(tx kv.Txn) error) error {
	t := &txn{b: tx.Bucket(bucket), writable: writable}
	err := fn(t)
	t.done = true
	if err != nil {
		return fnError{err}
	}
	return nil
}

func (s *Store) result(op string, err error) error {
	if fe, ok := errors.AsType[fnError](err); ok {
		return fe.err
	}
	if err != nil {
		return fmt.Errorf("boltkv: %s %s: %w", op, s.path, err)
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
		return fmt.Errorf("boltkv: close %s: %w", s.path, err)
	}
	return nil
}
