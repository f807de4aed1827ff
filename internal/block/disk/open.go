package disk

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/zeebo/blake3"

	"tessera/internal/block"
)

// Open opens the block store in dir, creating it if needed. It takes an
// exclusive lock on the directory (a second Open of the same directory, in
// this or another process, fails until Close), removes temporary files left
// by a crash, and scans the blocks to compute Usage.
func Open(dir string) (*Store, error) {
	s, err := open(dir)
	if err != nil {
		return nil, fmt.Errorf("open block store %s: %w", dir, err)
	}
	return s, nil
}

func open(dir string) (*Store, error) {
	s := &Store{
		dir:    dir,
		blocks: filepath.Join(dir, "blocks"),
		tmp:    filepath.Join(dir, "tmp"),

		verifyBufs: make(chan []byte, 16),
		fan:        newFanOut(),
	}
	s.recent.max = DefaultWriteCache
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	lock, err := os.OpenFile(filepath.Join(dir, "LOCK"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		lock.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%s is locked: the store is open elsewhere", lock.Name())
		}
		return nil, fmt.Errorf("lock %s: %w", lock.Name(), err)
	}
	s.lock = lock
	if err := s.init(); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func (s *Store) init() error {
	for _, d := range []string{s.blocks, s.tmp} {
		if err := os.Mkdir(d, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
	}
	if _, err := syncDir(s.dir); err != nil {
		return err
	}
	stale, err := os.ReadDir(s.tmp)
	if err != nil {
		return err
	}
	for _, e := range stale {
		if err := os.RemoveAll(filepath.Join(s.tmp, e.Name())); err != nil {
			return fmt.Errorf("remove stale temporary file: %w", err)
		}
	}
	if err := s.openJournal(); err != nil {
		return err
	}
	if err := s.scan(); err != nil {
		return fmt.Errorf("scan blocks: %w", err)
	}
	return nil
}

// Close releases the store's directory lock.
func (s *Store) Close() error {
	if s.lock == nil {
		return nil
	}
	var jerr error
	if s.jn != nil {
		jerr = s.jn.close()
	}
	err := s.lock.Close() // closing the descriptor drops the flock
	s.lock = nil
	if err == nil {
		err = jerr
	}
	if err != nil {
		return fmt.Errorf("close block store %s: %w", s.dir, err)
	}
	return nil
}

// List calls fn for every stored block. Blocks put or removed while List
// runs may or may not be seen. An error from fn stops the walk and is
// returned.
func (s *Store) List(ctx context.Context, fn func(block.Info) error) error {
	if err := s.walk(ctx, fn); err != nil {
		return fmt.Errorf("list blocks in %s: %w", s.dir, err)
	}
	return nil
}

// walk visits blocks/xx/yy/<hash>. Names that are not block files are
// skipped, and so are fan-out directories pruned while it runs.
func (s *Store) walk(ctx context.Context, fn func(block.Info) error) error {
	l1s, err := os.ReadDir(s.blocks)
	if err != nil {
		return err
	}
	for _, l1 := range l1s {
		b1, ok := fanName(l1)
		if !ok {
			continue
		}
		l2s, err := readDir(filepath.Join(s.blocks, l1.Name()))
		if err != nil {
			return err
		}
		for _, l2 := range l2s {
			b2, ok := fanName(l2)
			if !ok {
				continue
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			files, err := readDir(filepath.Join(s.blocks, l1.Name(), l2.Name()))
			if err != nil {
				return err
			}
			for _, f := range files {
				info, _, ok, err := blockInfo(f, b1, b2)
				if err != nil {
					return err
				}
				if !ok {
					continue
				}
				if err := fn(info); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// readDir is os.ReadDir of a fan-out directory, which is no error when the
// directory is gone (pruned since its parent was read).
func readDir(dir string) ([]os.DirEntry, error) {
	es, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return es, err
}

// fanName returns the byte a fan-out directory's name stands for; ok is
// false for anything else.
func fanName(e os.DirEntry) (b byte, ok bool) {
	var x [1]byte
	if !e.IsDir() || len(e.Name()) != 2 || !decodeHex(x[:], e.Name()) {
		return 0, false
	}
	return x[0], true
}

// blockInfo returns the Info of entry f of leaf blocks/b1/b2 and what its
// file takes on disk; ok is false when f is not a block file of that leaf
// (or is gone since the leaf was read).
func blockInfo(f os.DirEntry, b1, b2 byte) (info block.Info, alloc int64, ok bool, err error) {
	h, err := block.ParseHash(f.Name())
	if err != nil || h[0] != b1 || h[1] != b2 || !f.Type().IsRegular() || f.Name() != h.String() {
		return block.Info{}, 0, false, nil
	}
	fi, err := f.Info()
	if errors.Is(err, fs.ErrNotExist) {
		return block.Info{}, 0, false, nil // removed since ReadDir
	}
	if err != nil {
		return block.Info{}, 0, false, err
	}
	return block.Info{Hash: h, Size: fi.Size(), ModTime: fi.ModTime().UnixNano()}, allocOfInfo(fi), true, nil
}

func decodeHex(dst []byte, s string) bool {
	_, err := hex.Decode(dst, []byte(s))
	return err == nil
}

// newHasher returns a streaming hasher that computes block.Sum.
func newHasher() hash.Hash { return blake3.New() }
