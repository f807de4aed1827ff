package fuse

import (
	"context"
	"syscall"

	gofuse "github.com/hanwen/go-fuse/v2/fuse"

	"tessera/internal/client"
	"tessera/internal/meta"
)

// fallocate(2) modes (linux/falloc.h).
const (
	fallocKeepSize  = 0x01
	fallocPunchHole = 0x02
	fallocZeroRange = 0x10
)

// zeros is what a punched or zeroed range is written with; writes copy it
// into their buffers, so one read-only slice serves every request.
var zeros = make([]byte, 1<<20)

// Fallocate supports
//   - mode 0: grow the file; the new range reads as zeros (space is not
//     reserved: blocks are stored as they are written);
//   - FALLOC_FL_KEEP_SIZE alone: nothing to do, for the same reason;
//   - FALLOC_FL_PUNCH_HOLE|FALLOC_FL_KEEP_SIZE and FALLOC_FL_ZERO_RANGE
//     (with or without KEEP_SIZE): the range is written with zeros through
//     the handle, so it commits under the file's policy like any write; a
//     block that ends up all zeros is stored as a hole (a zero hash in the
//     recipe) and a partial one is rewritten. Without KEEP_SIZE a zeroed
//     range past the end grows the file.
//
// COLLAPSE_RANGE, INSERT_RANGE and UNSHARE_RANGE get EOPNOTSUPP.
func (fs *FS) Fallocate(cancel <-chan struct{}, input *gofuse.FallocateIn) gofuse.Status {
	switch input.Mode {
	case fallocKeepSize:
		return gofuse.OK
	case 0:
		return fs.grow(ctxOf(cancel, &input.InHeader), meta.Ino(input.NodeId), input.Offset+input.Length)
	case fallocPunchHole | fallocKeepSize, fallocZeroRange, fallocZeroRange | fallocKeepSize:
	default:
		return gofuse.Status(syscall.EOPNOTSUPP)
	}
	h := fs.file(input.Fh)
	if h == nil {
		return gofuse.EBADF
	}
	end := int64(input.Offset + input.Length)
	if input.Mode&fallocKeepSize != 0 {
		end = min(end, h.Size())
	}
	return fs.status("fallocate", zeroRange(killable(cancel, &input.InHeader), h, int64(input.Offset), end))
}

// grow makes ino at least size bytes long.
func (fs *FS) grow(ctx context.Context, ino meta.Ino, size uint64) gofuse.Status {
	in, err := fs.api.GetAttr(ctx, ino)
	if err != nil {
		return fs.status("fallocate", err)
	}
	fs.c.Overlay(&in)
	if size > in.Size {
		if _, err := fs.c.Truncate(ctx, in, int64(size)); err != nil {
			return fs.status("fallocate", err)
		}
	}
	return gofuse.OK
}

// zeroRange writes zeros over [off, end) through h.
func zeroRange(ctx context.Context, h *client.Handle, off, end int64) error {
	for off < end {
		n := min(int64(len(zeros)), end-off)
		if _, err := h.Write(ctx, off, zeros[:n]); err != nil {
			return err
		}
		off += n
	}
	return nil
}
