package fuse

import (
	"syscall"

	gofuse "github.com/hanwen/go-fuse/v2/fuse"

	"tessera/internal/client"
	"tessera/internal/meta"
)

// open opens in; created says the inode was just made by this request (an
// O_EXCL create), so the kernel has nothing of it cached.
func (fs *FS) open(cancel <-chan struct{}, hdr *gofuse.InHeader, in meta.Inode, flags uint32, created bool, out *gofuse.OpenOut) gofuse.Status {
	h, mode, err := fs.c.Open(ctxOf(cancel, hdr), in, int(flags))
	if err != nil {
		return fs.status("open", err)
	}
	fs.opened(h, in.Ino, mode, created, out)
	return gofuse.OK
}

// opened registers h and tells the kernel how to cache the file. When the
// kernel may not keep the pages it has, it must not keep the size it has
// either: a read past a stale, shorter size would end early. A file just
// created has neither (and no notification need be sent for it).
func (fs *FS) opened(h *client.Handle, ino meta.Ino, mode client.OpenMode, created bool, out *gofuse.OpenOut) {
	out.Fh = fs.addFile(h)
	if mode.KeepCache {
		out.OpenFlags |= gofuse.FOPEN_KEEP_CACHE
	} else if !created {
		fs.invalidateAttr(ino)
	}
	if mode.DirectIO {
		out.OpenFlags |= gofuse.FOPEN_DIRECT_IO
	}
}

func (fs *FS) Create(cancel <-chan struct{}, input *gofuse.CreateIn, name string, out *gofuse.CreateOut) gofuse.Status {
	req := meta.CreateReq{
		Parent: meta.Ino(input.NodeId),
		Name:   name,
		Mode:   input.Mode&^syscall.S_IFMT | syscall.S_IFREG,
		Uid:    input.Uid,
		Gid:    input.Gid,
		Excl:   input.Flags&syscall.O_EXCL != 0,
	}
	ctx := ctxOf(cancel, &input.InHeader)
	in, err := fs.api.Create(ctx, req)
	if err != nil {
		return fs.status("create", err)
	}
	if input.Flags&syscall.O_TRUNC != 0 && in.Size > 0 {
		if in, err = fs.c.Truncate(ctx, in, 0); err != nil {
			return fs.status("create", err)
		}
	}
	fs.fillEntry(&in, &out.EntryOut)
	return fs.open(cancel, &input.InHeader, in, input.Flags, req.Excl, &out.OpenOut)
}

func (fs *FS) Open(cancel <-chan struct{}, input *gofuse.OpenIn, out *gofuse.OpenOut) gofuse.Status {
	h, mode, in, err := fs.c.OpenIno(ctxOf(cancel, &input.InHeader), meta.Ino(input.NodeId), int(input.Flags))
	if err != nil {
		return fs.status("open", err)
	}
	if in.IsDir() {
		h.Release(ctxOf(cancel, &input.InHeader))
		return gofuse.Status(syscall.EISDIR)
	}
	fs.opened(h, in.Ino, mode, false, out)
	return gofuse.OK
}

func (fs *FS) Read(cancel <-chan struct{}, input *gofuse.ReadIn, buf []byte) (gofuse.ReadResult, gofuse.Status) {
	h := fs.file(input.Fh)
	if h == nil {
		return nil, gofuse.EBADF
	}
	n, err := h.Read(ctxOf(cancel, &input.InHeader), int64(input.Offset), buf[:min(len(buf), int(input.Size))])
	if err != nil {
		return nil, fs.status("read", err)
	}
	return gofuse.ReadResultData(buf[:n]), gofuse.OK
}

func (fs *FS) Write(cancel <-chan struct{}, input *gofuse.WriteIn, data []byte) (uint32, gofuse.Status) {
	h := fs.file(input.Fh)
	if h == nil {
		return 0, gofuse.EBADF
	}
	n, err := h.Write(killable(cancel, &input.InHeader), int64(input.Offset), data)
	if err != nil {
		return uint32(n), fs.status("write", err)
	}
	return uint32(n), gofuse.OK
}

func (fs *FS) Flush(cancel <-chan struct{}, input *gofuse.FlushIn) gofuse.Status {
	h := fs.file(input.Fh)
	if h == nil {
		return gofuse.EBADF
	}
	return fs.status("flush", h.Flush(killable(cancel, &input.InHeader)))
}

func (fs *FS) Fsync(cancel <-chan struct{}, input *gofuse.FsyncIn) gofuse.Status {
	h := fs.file(input.Fh)
	if h == nil {
		// fsync(2) on a file opened elsewhere: nothing buffered here,
		// but what was committed must be durable.
		return fs.status("fsync", fs.c.Sync(ctxOf(cancel, &input.InHeader)))
	}
	return fs.status("fsync", h.Fsync(killable(cancel, &input.InHeader)))
}

func (fs *FS) Release(cancel <-chan struct{}, input *gofuse.ReleaseIn) {
	fs.mu.Lock()
	h := fs.mu.files[input.Fh]
	delete(fs.mu.files, input.Fh)
	fs.mu.Unlock()
	if h == nil {
		return
	}
	if err := h.Release(ctxOf(cancel, &input.InHeader)); err != nil {
		fs.log.Error("release: data written since the last fsync may be lost", "inode", input.NodeId, "err", err)
	}
}

// Lseek knows holes only at the end of the file: SEEK_DATA finds data at
// any offset before the end, SEEK_HOLE finds the end.
func (fs *FS) Lseek(cancel <-chan struct{}, in *gofuse.LseekIn, out *gofuse.LseekOut) gofuse.Status {
	h := fs.file(in.Fh)
	if h == nil {
		return gofuse.EBADF
	}
	size := uint64(h.Size())
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

// Fallocate supports mode 0 (grow the file; the new range reads as zeros,
// space is not reserved) and FALLOC_FL_KEEP_SIZE (a no-op).
func (fs *FS) Fallocate(cancel <-chan struct{}, input *gofuse.FallocateIn) gofuse.Status {
	const keepSize = 1
	switch input.Mode {
	case keepSize:
		return gofuse.OK
	case 0:
	default:
		return gofuse.Status(syscall.EOPNOTSUPP)
	}
	ctx := ctxOf(cancel, &input.InHeader)
	in, err := fs.api.GetAttr(ctx, meta.Ino(input.NodeId))
	if err != nil {
		return fs.status("fallocate", err)
	}
	fs.c.Overlay(&in)
	if end := input.Offset + input.Length; end > in.Size {
		if _, err := fs.c.Truncate(ctx, in, int64(end)); err != nil {
			return fs.status("fallocate", err)
		}
	}
	return gofuse.OK
}
