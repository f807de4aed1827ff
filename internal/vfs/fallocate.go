package vfs

import (
	"context"
	"syscall"

	"tessera/internal/client"
	"tessera/internal/meta"
)

// fallocate(2) modes (linux/falloc.h).
const (
	FallocKeepSize  = 0x01
	FallocPunchHole = 0x02
	FallocZeroRange = 0x10
)

// zeros is what a punched or zeroed range is written with; writes copy it
// into their buffers, so one read-only slice serves every request.
var zeros = make([]byte, 1<<20)

// Allocate is fallocate(2) on file ino, open as handle fh (which the modes
// that write need: EBADF without it). It supports
//   - mode 0: grow the file; the new range reads as zeros (space is not
//     reserved: blocks are stored as they are written);
//   - FallocKeepSize alone: nothing to do, for the same reason;
//   - FallocPunchHole|FallocKeepSize and FallocZeroRange (with or without
//     KEEP_SIZE): the range is written with zeros through the handle, so
//     it commits under the file's policy like any write; a block that ends
//     up all zeros is stored as a hole (a zero hash in the recipe) and a
//     partial one is rewritten. Without KEEP_SIZE a zeroed range past the
//     end grows the file.
//
// COLLAPSE_RANGE, INSERT_RANGE and UNSHARE_RANGE get EOPNOTSUPP; a handle
// of a caller not Checked that was not opened for writing gets EBADF.
func (v *FS) Allocate(ctx context.Context, ino meta.Ino, fh uint64, mode uint32, off, length uint64) error {
	switch mode {
	case FallocKeepSize:
		return nil
	case 0:
		if f := v.File(fh); f != nil && !f.cred.Checked && f.flags&syscall.O_ACCMODE == syscall.O_RDONLY {
			return errorf("fallocate", ino, syscall.EBADF)
		}
		return v.grow(ctx, ino, off+length)
	case FallocPunchHole | FallocKeepSize, FallocZeroRange, FallocZeroRange | FallocKeepSize:
	default:
		return errorf("fallocate", ino, syscall.EOPNOTSUPP)
	}
	f := v.File(fh)
	if f == nil || (!f.cred.Checked && f.flags&syscall.O_ACCMODE == syscall.O_RDONLY) {
		return errorf("fallocate", ino, syscall.EBADF)
	}
	end := int64(off + length)
	if mode&FallocKeepSize != 0 {
		end = min(end, f.h.Size())
	}
	return zeroRange(ctx, f.h, int64(off), end)
}

// grow makes ino at least size bytes long.
func (v *FS) grow(ctx context.Context, ino meta.Ino, size uint64) error {
	defer v.changed(ino)
	in, err := v.api.GetAttr(ctx, ino)
	if err != nil {
		return err
	}
	v.c.Overlay(&in)
	if size > in.Size {
		if _, err := v.c.Truncate(ctx, in, int64(size)); err != nil {
			return err
		}
	}
	return nil
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
