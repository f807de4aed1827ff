package disk

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	"tessera/internal/block"
)

// Get returns block h, verified against its hash. A mismatch is an error
// wrapping block.ErrCorrupt that names the file.
func (s *Store) Get(ctx context.Context, h block.Hash) ([]byte, error) {
	return s.GetAlloc(ctx, h, nil)
}

// GetAlloc is Get reading into a buffer from alloc (nil: allocate) once
// the block's size n is known: alloc(n) returns a buffer of capacity at
// least n, or nil. The result is the caller's alone. A client in the same
// process (tessera up's mount) reads through it into the memory of blocks
// its cache evicted (client/bufpool.go) instead of a new buffer per
// fetch: under fsx these were 12-16 MB of up's live heap, garbage once
// evicted.
func (s *Store) GetAlloc(ctx context.Context, h block.Hash, alloc func(n int) []byte) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("get block %s: %w", h, err)
	}
	f, err := s.open(h)
	if err != nil {
		return nil, fmt.Errorf("get block %s: %w", h, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("get block %s: %w", h, err)
	}
	var data []byte
	if alloc != nil {
		data = alloc(int(fi.Size()))
	}
	if int64(cap(data)) < fi.Size() {
		// The slack spares the hasher copies of the block's tail.
		data = make([]byte, fi.Size(), fi.Size()+hashSlack)
	}
	data = data[:fi.Size()]
	if _, err := io.ReadFull(f, data); err != nil {
		return nil, fmt.Errorf("get block %s: read %s: %w", h, f.Name(), err)
	}
	if got := block.Sum(data); got != h {
		return nil, s.corruptFound(h, f.Name(), got)
	}
	return data, nil
}

// GetRange returns n bytes of block h from offset off (fewer if the block
// ends first). A range cannot be verified against the block's hash: callers
// that need integrity fetch whole blocks.
func (s *Store) GetRange(ctx context.Context, h block.Hash, off, n int64) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("get block %s range: %w", h, err)
	}
	if off < 0 || n < 0 {
		return nil, fmt.Errorf("get block %s range %d+%d: negative offset or length", h, off, n)
	}
	f, err := s.open(h)
	if err != nil {
		return nil, fmt.Errorf("get block %s range: %w", h, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("get block %s range: %w", h, err)
	}
	if off > fi.Size() {
		return nil, fmt.Errorf("get block %s range %d+%d: block has %d bytes", h, off, n, fi.Size())
	}
	n = min(n, fi.Size()-off)
	data := make([]byte, n)
	if _, err := f.ReadAt(data, off); err != nil && !(errors.Is(err, io.EOF) && n == 0) {
		return nil, fmt.Errorf("get block %s range: read %s: %w", h, f.Name(), err)
	}
	return data, nil
}

// OpenBlock opens the file of block h for reading and returns it with the
// block's Info; the caller closes it. With verify, the whole file is hashed
// first (a mismatch wraps block.ErrCorrupt and names the file) and the file
// is returned positioned at its start. It lets a server send the file with
// sendfile after checking it.
func (s *Store) OpenBlock(ctx context.Context, h block.Hash, verify bool) (*os.File, block.Info, error) {
	if err := ctx.Err(); err != nil {
		return nil, block.Info{}, fmt.Errorf("open block %s: %w", h, err)
	}
	f, err := s.open(h)
	if err != nil {
		return nil, block.Info{}, fmt.Errorf("open block %s: %w", h, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, block.Info{}, fmt.Errorf("open block %s: %w", h, err)
	}
	info := block.Info{Hash: h, Size: fi.Size(), ModTime: fi.ModTime().UnixNano()}
	if !verify {
		return f, info, nil
	}
	if err := s.verifyFile(h, f, true); err != nil {
		f.Close()
		return nil, block.Info{}, err
	}
	return f, info, nil
}

// Check implements block.Checker: it re-hashes the file of block h and,
// with quarantine, moves a corrupt one to DIR/quarantine (as Get does).
func (s *Store) Check(ctx context.Context, h block.Hash, quarantine bool) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("check block %s: %w", h, err)
	}
	f, err := s.open(h)
	if err != nil {
		return fmt.Errorf("check block %s: %w", h, err)
	}
	defer f.Close()
	return s.verifyFile(h, f, quarantine)
}

// verifyFile hashes f, which holds block h, and rewinds it. A mismatch is
// an error wrapping block.ErrCorrupt; with quarantine the file is moved
// out of the store first (corruptFound).
func (s *Store) verifyFile(h block.Hash, f *os.File, quarantine bool) error {
	var buf []byte
	select {
	case buf = <-s.verifyBufs:
	default:
		buf = make([]byte, verifyBufSize, verifyBufSize+hashSlack)
	}
	defer func() {
		select {
		case s.verifyBufs <- buf:
		default:
		}
	}()
	hh := newHasher()
	for {
		n, err := f.Read(buf)
		hh.Write(buf[:n])
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("verify block %s: read %s: %w", h, f.Name(), err)
		}
	}
	var got block.Hash
	hh.Sum(got[:0])
	if got != h {
		if !quarantine {
			return corrupt(h, f.Name(), got)
		}
		return s.corruptFound(h, f.Name(), got)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("verify block %s: %w", h, err)
	}
	return nil
}

// Stat returns the Info of block h without reading it.
func (s *Store) Stat(ctx context.Context, h block.Hash) (block.Info, error) {
	if err := ctx.Err(); err != nil {
		return block.Info{}, fmt.Errorf("stat block %s: %w", h, err)
	}
	fi, err := os.Stat(s.Path(h))
	if errors.Is(err, fs.ErrNotExist) {
		return block.Info{}, fmt.Errorf("stat block %s: %w", h, block.ErrNotFound)
	}
	if err != nil {
		return block.Info{}, fmt.Errorf("stat block %s: %w", h, err)
	}
	return block.Info{Hash: h, Size: fi.Size(), ModTime: fi.ModTime().UnixNano()}, nil
}

// Has reports, for each hash, whether its file exists.
func (s *Store) Has(ctx context.Context, hs []block.Hash) ([]bool, error) {
	out := make([]bool, len(hs))
	for i, h := range hs {
		if i%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("has blocks: %w", err)
			}
		}
		_, err := os.Stat(s.Path(h))
		switch {
		case err == nil:
			out[i] = true
		case errors.Is(err, fs.ErrNotExist):
		default:
			return nil, fmt.Errorf("has block %s: %w", h, err)
		}
	}
	return out, nil
}

// Touch is Has that also sets the mtime of every block it finds to now (a
// Put of it again, without the data): see block.Toucher. It takes each
// block's lock, so it is ordered with a concurrent Remove.
func (s *Store) Touch(ctx context.Context, hs []block.Hash) ([]bool, error) {
	out := make([]bool, len(hs))
	for i, h := range hs {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("touch blocks: %w", err)
		}
		mu := s.lockFor(h)
		mu.Lock()
		now := time.Now()
		err := os.Chtimes(s.Path(h), now, now)
		mu.Unlock()
		switch {
		case err == nil:
			out[i] = true
		case errors.Is(err, fs.ErrNotExist):
		default:
			return nil, fmt.Errorf("touch block %s: %w", h, classify(err))
		}
	}
	return out, nil
}
