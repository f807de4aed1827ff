package fuse

import (
	"context"
	"syscall"

	gofuse "github.com/hanwen/go-fuse/v2/fuse"

	"tessera/internal/meta"
	"tessera/internal/vfs"
)

// Open files live in vfs (vfs.FS.OpenFile, CreateOpen, Tmpfile; the handle
// number is the FUSE file handle); this file turns their answers into the
// kernel's, and says how the kernel may cache each file.

// opened tells the kernel how to cache the file o opened. When the kernel
// may not keep the pages it has, it must not keep the size it has either:
// a read past a stale, shorter size would end early. A file just created
// has neither (and no notification need be sent for it).
func (fs *FS) opened(o vfs.Opened, out *gofuse.OpenOut) {
	out.Fh = o.Fh
	if o.Mode.KeepCache {
		out.OpenFlags |= gofuse.FOPEN_KEEP_CACHE
	} else if !o.Created {
		fs.invalidateAttr(o.File.Ino())
	}
	if o.Mode.DirectIO {
		out.OpenFlags |= gofuse.FOPEN_DIRECT_IO
	}
}

// Create is open(2) with O_CREAT (vfs.FS.CreateOpen: O_EXCL, and O_TRUNC
// of an existing file, which the kernel sends no SETATTR for after a
// CREATE).
func (fs *FS) Create(cancel <-chan struct{}, input *gofuse.CreateIn, name string, out *gofuse.CreateOut) gofuse.Status {
	req := meta.CreateReq{Parent: meta.Ino(input.NodeId), Name: name, Mode: input.Mode}
	ctx := ctxOf(cancel, &input.InHeader)
	o, err := fs.v.CreateOpen(ctx, cred(&input.InHeader), req, input.Flags)
	if err == nil && !o.Created && input.OpenFlags&gofuse.OPEN_KILL_SUIDGID != 0 {
		// O_TRUNC of an existing file by a caller without CAP_FSETID
		// (HANDLE_KILLPRIV_V2): the truncate clears the set-id bits.
		if err = fs.killSuidgid(ctx, o.Inode.Ino); err != nil {
			_ = fs.v.Release(ctx, o.Fh)
			return fs.status("open", err)
		}
		o.Inode.Mode &^= vfs.KillBits(o.Inode.Mode)
	}
	if o.Inode.Ino != 0 {
		fs.fillEntry(&o.Inode, &out.EntryOut)
	}
	if err != nil {
		st := "create"
		if o.Inode.Ino != 0 {
			st = "open"
		}
		return fs.status(st, err)
	}
	fs.opened(o, &out.OpenOut)
	return gofuse.OK
}

func (fs *FS) Open(cancel <-chan struct{}, input *gofuse.OpenIn, out *gofuse.OpenOut) gofuse.Status {
	ctx := ctxOf(cancel, &input.InHeader)
	o, err := fs.v.OpenFile(ctx, cred(&input.InHeader), meta.Ino(input.NodeId), input.Flags)
	if err != nil {
		return fs.status("open", err)
	}
	if input.Mode&gofuse.OPEN_KILL_SUIDGID != 0 {
		// OpenIn.Mode carries the open flags: O_TRUNC by a caller
		// without CAP_FSETID (HANDLE_KILLPRIV_V2) clears the set-id bits.
		if err := fs.killSuidgid(ctx, o.File.Ino()); err != nil {
			_ = fs.v.Release(ctx, o.Fh)
			return fs.status("open", err)
		}
	}
	fs.opened(o, out)
	return gofuse.OK
}

func (fs *FS) Read(cancel <-chan struct{}, input *gofuse.ReadIn, buf []byte) (gofuse.ReadResult, gofuse.Status) {
	f := fs.v.File(input.Fh)
	if f == nil {
		return nil, gofuse.EBADF
	}
	n, err := f.Read(ctxOf(cancel, &input.InHeader), int64(input.Offset), buf[:min(len(buf), int(input.Size))])
	if err != nil {
		return nil, fs.status("read", err)
	}
	return gofuse.ReadResultData(buf[:n]), gofuse.OK
}

func (fs *FS) Write(cancel <-chan struct{}, input *gofuse.WriteIn, data []byte) (uint32, gofuse.Status) {
	f := fs.v.File(input.Fh)
	if f == nil {
		return 0, gofuse.EBADF
	}
	ctx := killable(cancel, &input.InHeader)
	if input.WriteFlags&gofuse.WRITE_KILL_SUIDGID != 0 {
		// Before the write, as the kernel does for page-cache writes: a
		// write that failed to clear them has not happened.
		if err := fs.killSuidgid(ctx, meta.Ino(input.NodeId)); err != nil {
			return 0, fs.status("write", err)
		}
	}
	n, err := f.Write(ctx, int64(input.Offset), data)
	if err != nil {
		return uint32(n), fs.status("write", err)
	}
	return uint32(n), gofuse.OK
}

// killSuidgid clears the set-id bits a write by a caller without
// CAP_FSETID clears (vfs.FS.KillSuidgid): the kernel does it itself (a
// SETATTR before the write) for writes through the page cache, but for
// direct I/O it only flags the WRITE (WRITE_KILL_SUIDGID) and leaves it to
// the file system.
func (fs *FS) killSuidgid(ctx context.Context, ino meta.Ino) error {
	changed, err := fs.v.KillSuidgid(ctx, ino)
	if changed {
		fs.invalidateAttr(ino)
	}
	return err
}

func (fs *FS) Flush(cancel <-chan struct{}, input *gofuse.FlushIn) gofuse.Status {
	f := fs.v.File(input.Fh)
	if f == nil {
		return gofuse.EBADF
	}
	return fs.status("flush", f.Flush(killable(cancel, &input.InHeader)))
}

func (fs *FS) Fsync(cancel <-chan struct{}, input *gofuse.FsyncIn) gofuse.Status {
	f := fs.v.File(input.Fh)
	if f == nil {
		// fsync(2) on a file opened elsewhere: nothing buffered here,
		// but what was committed must be durable.
		return fs.status("fsync", fs.v.Sync(ctxOf(cancel, &input.InHeader)))
	}
	return fs.status("fsync", f.Fsync(killable(cancel, &input.InHeader)))
}

func (fs *FS) Release(cancel <-chan struct{}, input *gofuse.ReleaseIn) {
	if err := fs.v.Release(ctxOf(cancel, &input.InHeader), input.Fh); err != nil {
		fs.log.Error("release: data written since the last fsync may be lost", "inode", input.NodeId, "err", err)
	}
}

// Lseek knows holes only at the end of the file: SEEK_DATA finds data at
// any offset before the end, SEEK_HOLE finds the end.
func (fs *FS) Lseek(cancel <-chan struct{}, in *gofuse.LseekIn, out *gofuse.LseekOut) gofuse.Status {
	f := fs.v.File(in.Fh)
	if f == nil {
		return gofuse.EBADF
	}
	size := uint64(f.Size())
	const seekData, seekHole = 3, 4
	switch in.Whence {
	case seekData:
		if in.Offset >= size {
			return gofuse.Status(syscall.ENXIO)
		}
		out.Offset = in.Offset
	case seekHole:
		if in.Offset > size {
			return gofuse.Status(syscall.ENXIO)
		}
		out.Offset = size
	default:
		return gofuse.ENOSYS
	}
	return gofuse.OK
}

// Tmpfile makes and opens an unnamed file in the directory (open(2) with
// O_TMPFILE; vfs.FS.Tmpfile): reaped at its last release unless linkat
// named it (the kernel allows that unless O_EXCL was given).
func (fs *FS) Tmpfile(cancel <-chan struct{}, input *gofuse.CreateIn, out *gofuse.CreateOut) gofuse.Status {
	o, err := fs.v.Tmpfile(ctxOf(cancel, &input.InHeader), cred(&input.InHeader), meta.Ino(input.NodeId), input.Mode, input.Flags)
	if o.Inode.Ino != 0 {
		fs.fillEntry(&o.Inode, &out.EntryOut)
	}
	if err != nil {
		st := "tmpfile"
		if o.Inode.Ino != 0 {
			st = "open"
		}
		return fs.status(st, err)
	}
	fs.opened(o, &out.OpenOut)
	return gofuse.OK
}

// Fallocate is fallocate(2) (vfs.FS.Allocate).
func (fs *FS) Fallocate(cancel <-chan struct{}, input *gofuse.FallocateIn) gofuse.Status {
	err := fs.v.Allocate(killable(cancel, &input.InHeader), meta.Ino(input.NodeId), input.Fh, input.Mode, input.Offset, input.Length)
	return fs.status("fallocate", err)
}
