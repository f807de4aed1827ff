package disk

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	"tessera/internal/block"
)

// LocalReader is the co-located fast path of lpNFS: a client on the same
// host as a block server reads the server's block files directly instead of
// asking over the network, and verifies them itself. Everything else (Put,
// Has) and any Get the file cannot serve go to the server (next).
//
// It only reads: the server stays the sole writer of its directory. A corrupt
// file is reported with its path and is an error (the caller tries another
// copy, as with any corrupt copy); a missing or unreadable file falls back to
// the server.
type LocalReader struct {
	blocks string // the server's DIR/blocks
	next   block.Store
	log    *slog.Logger
}

var _ block.Store = (*LocalReader)(nil)

// NewLocalReader returns a store reading the block files of the server whose
// data directory is dir, with next as the way to the server itself. It
// returns nil when dir does not look like a block store on this host.
func NewLocalReader(dir string, next block.Store, log *slog.Logger) *LocalReader {
	blocks := filepath.Join(dir, "blocks")
	if fi, err := os.Stat(blocks); err != nil || !fi.IsDir() {
		return nil
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &LocalReader{blocks: blocks, next: next, log: log}
}

func (l *LocalReader) path(h block.Hash) string {
	x := h.String()
	return filepath.Join(l.blocks, x[0:2], x[2:4], x)
}

// Get reads the block file directly and verifies it.
func (l *LocalReader) Get(ctx context.Context, h block.Hash) ([]byte, error) {
	return l.GetAlloc(ctx, h, nil)
}

// GetAlloc is Get reading into a buffer from alloc (nil: allocate) once the
// block's size n is known, as block/client.Client.GetAlloc: alloc(n)
// returns a buffer of capacity at least n, or nil. The result is the
// caller's alone. A Get the file cannot serve goes to the server, with
// alloc when it reads into the caller's buffers too.
func (l *LocalReader) GetAlloc(ctx context.Context, h block.Hash, alloc func(n int) []byte) ([]byte, error) {
	p := l.path(h)
	f, err := os.Open(p)
	if err != nil {
		return l.nextGet(ctx, h, alloc)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return l.nextGet(ctx, h, alloc)
	}
	var data []byte
	if alloc != nil {
		data, alloc = alloc(int(fi.Size())), nil
	}
	if int64(cap(data)) < fi.Size() {
		data = make([]byte, fi.Size(), fi.Size()+hashSlack)
	}
	data = data[:fi.Size()]
	if _, err := io.ReadFull(f, data); err != nil {
		return l.nextGet(ctx, h, nil)
	}
	if got := block.Sum(data); got != h {
		err := corrupt(h, p, got)
		l.log.Error("corrupt block file", "file", p, "block", h.String(), "got", got.String())
		return nil, err
	}
	return data, nil
}

// nextGet asks the server for h, into a buffer from alloc when it can.
func (l *LocalReader) nextGet(ctx context.Context, h block.Hash, alloc func(n int) []byte) ([]byte, error) {
	if ag, ok := l.next.(interface {
		GetAlloc(context.Context, block.Hash, func(int) []byte) ([]byte, error)
	}); ok && alloc != nil {
		return ag.GetAlloc(ctx, h, alloc)
	}
	return l.next.Get(ctx, h)
}

// OpenBlockFile opens block h's file for reading, unverified: the caller
// checks what it reads (see the client's segment sums). A missing file is
// an error wrapping block.ErrNotFound.
func (l *LocalReader) OpenBlockFile(h block.Hash) (*os.File, error) {
	f, err := os.Open(l.path(h))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("open block %s: %w", h, block.ErrNotFound)
	}
	return f, err
}

// IsLocal reports that blocks come from files on this host, so a client's
// disk cache need not keep copies of them.
func (l *LocalReader) IsLocal() bool { return true }

// Remote returns the server behind the files, for what only it can do
// (writing, and moving a corrupt file aside when its own read finds it).
func (l *LocalReader) Remote() block.Store { return l.next }

// Put goes to the server, which alone writes its directory.
func (l *LocalReader) Put(ctx context.Context, h block.Hash, data []byte) error {
	return l.next.Put(ctx, h, data)
}

// Has asks the server.
func (l *LocalReader) Has(ctx context.Context, hs []block.Hash) ([]bool, error) {
	return l.next.Has(ctx, hs)
}

// Touch asks the server (block.Toucher), or Has if it cannot touch.
func (l *LocalReader) Touch(ctx context.Context, hs []block.Hash) ([]bool, error) {
	if t, ok := l.next.(block.Toucher); ok {
		return t.Touch(ctx, hs)
	}
	return l.next.Has(ctx, hs)
}

// OpenBlockFile opens block h's file for reading, unverified, for callers
// that check what they read themselves (see LocalReader.OpenBlockFile).
func (s *Store) OpenBlockFile(h block.Hash) (*os.File, error) {
	return (&LocalReader{blocks: s.blocks}).OpenBlockFile(h)
}

// IsLocal reports that the store's blocks are files on this host.
func (s *Store) IsLocal() bool { return true }

var _ block.SpaceReporter = (*LocalReader)(nil)

// SpaceInfo asks the server (block.SpaceReporter), which is the one that
// knows what its store takes.
func (l *LocalReader) SpaceInfo(ctx context.Context) (block.Space, error) {
	if sr, ok := l.next.(block.SpaceReporter); ok {
		return sr.SpaceInfo(ctx)
	}
	return block.Space{}, block.ErrNoSpaceInfo
}
