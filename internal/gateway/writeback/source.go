package writeback

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"tessera/internal/client"
	"tessera/internal/meta"
)

// ErrPartial: a file changed locally while only part of home's content
// was cached cannot be written back whole; the operation fails for good
// (listed in status) until the file is fetched whole and changed again.
var ErrPartial = errors.New("not cached whole")

// ClientSource reads files through Tessera's client library, as the
// gateway role does.
type ClientSource struct{ C *client.Client }

// Open opens ino read-only; the reader releases the open when closed.
func (s ClientSource) Open(ctx context.Context, ino meta.Ino) (io.ReadCloser, int64, error) {
	h, _, in, err := s.C.OpenIno(ctx, ino, os.O_RDONLY)
	if err != nil {
		return nil, 0, err
	}
	if g := in.Gateway; g != nil && g.HomePath != "" && g.State != meta.CacheCached {
		// Unfetched ranges would read as zeros and overwrite home's.
		h.Release(ctx)
		return nil, 0, fmt.Errorf("file %d (%s) is only partly cached: %w", ino, g.HomePath, ErrPartial)
	}
	size := int64(in.Size)
	return &handleReader{ctx: ctx, h: h, size: size}, size, nil
}

// handleReader reads a handle from its start, up to the size it had
// when opened (so the length WriteFile was promised holds).
type handleReader struct {
	ctx  context.Context
	h    *client.Handle
	off  int64
	size int64
}

func (r *handleReader) Read(p []byte) (int, error) {
	if r.off >= r.size {
		return 0, io.EOF
	}
	if rest := r.size - r.off; int64(len(p)) > rest {
		p = p[:rest]
	}
	n, err := r.h.Read(r.ctx, r.off, p)
	r.off += int64(n)
	if n == 0 && err == nil {
		// The file shrank since it was opened: pad with zeros so
		// the promised size holds; a later Put writes it right.
		clear(p)
		n = len(p)
		r.off += int64(n)
	}
	if err == io.EOF && r.off < r.size {
		err = nil
	}
	return n, err
}

func (r *handleReader) Close() error { return r.h.Release(r.ctx) }
