package fuse

import (
	"context"
	"errors"
	"fmt"
	"syscall"

	gofuse "github.com/hanwen/go-fuse/v2/fuse"

	"tessera/internal/client"
	"tessera/internal/meta"
)

// open opens in, which a create with Open returned (the meta service holds
// it open for us already); mark is the client's CallbackMark taken before
// the create; created says the inode was just made by this request (an
// O_EXCL create), so the kernel has nothing of it cached.
func (fs *FS) open(cancel <-chan struct{}, hdr *gofuse.InHeader, in meta.Inode, mark uint64, flags uint32, created bool, out *gofuse.OpenOut) gofuse.Status {
	h, mode, err := fs.c.OpenCreated(ctxOf(cancel, hdr), in, mark, int(flags))
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
	if fs.opts.ReadOnly { // readonly.go
		return fs.status("create", fmt.Errorf("create %q: the mount's identity may only read: %w", name, meta.ErrReadOnly))
	}
	req := meta.CreateReq{
		Parent: meta.Ino(input.NodeId),
		Name:   name,
		Mode:   input.Mode&^syscall.S_IFMT | syscall.S_IFREG,
		Uid:    input.Uid,
		Gid:    input.Gid,
		Excl:   input.Flags&syscall.O_EXCL != 0,
		Open:   true,
	}
	// O_TRUNC of a file that exists changes its mtime and ctime, also when
	// it is empty (as ext4 does): the kernel sends no SETATTR after a
	// CREATE, so the truncate is done here, and only on a file this request
	// did not make. An exclusive create first tells the two apart.
	trunc := input.Flags&syscall.O_TRUNC != 0
	ctx := ctxOf(cancel, &input.InHeader)
	excl := req.Excl
	req.Excl = excl || trunc
	mark := fs.c.CallbackMark()
	in, err := fs.api.Create(ctx, req)
	created := err == nil && req.Excl
	if errors.Is(err, meta.ErrExist) && !excl {
		req.Excl = false
		in, err = fs.api.Create(ctx, req)
	}
	if err != nil {
		return fs.status("create", err)
	}
	if !created && fs.opts.Gateway != nil && (trunc || input.Flags&syscall.O_ACCMODE != syscall.O_RDONLY) {
		// An existing file opened for writing: refused in a read-only
		// fileset (readonly.go).
		if err := fs.refuseReadOnly(ctx, "create", &in); err != nil {
			if rerr := fs.api.ReleaseOpen(ctx, in.Ino); rerr != nil {
				fs.log.Warn("create: releasing the open failed", "inode", in.Ino, "err", rerr)
			}
			return fs.status("create", err)
		}
	}
	if trunc && !created && in.IsRegular() {
		ino := in.Ino
		if fs.opts.Gateway != nil && needs(&in) {
			// A partly cached fileset file is completed before it changes.
			err := fs.complete(ctx, &in)
			if err == nil {
				in, err = fs.api.GetAttr(ctx, ino)
			}
			if err != nil {
				if rerr := fs.api.ReleaseOpen(ctx, ino); rerr != nil {
					fs.log.Warn("create: releasing the open failed", "inode", ino, "err", rerr)
				}
				return fs.status("create", err)
			}
		}
		if in, err = fs.c.Truncate(ctx, in, 0); err != nil {
			if rerr := fs.api.ReleaseOpen(ctx, ino); rerr != nil {
				fs.log.Warn("create: releasing the open failed", "inode", ino, "err", rerr)
			}
			return fs.status("create", err)
		}
	}
	fs.fillEntry(&in, &out.EntryOut)
	return fs.open(cancel, &input.InHeader, in, mark, input.Flags, created, &out.OpenOut)
}

func (fs *FS) Open(cancel <-chan struct{}, input *gofuse.OpenIn, out *gofuse.OpenOut) gofuse.Status {
	if err := fs.refuseWriteOpen("open", input.Flags); err != nil { // readonly.go
		return fs.status("open", err)
	}
	ctx := ctxOf(cancel, &input.InHeader)
	gin, err := fs.fill(ctx, meta.Ino(input.NodeId))
	if err != nil {
		return fs.status("open", err)
	}
	if input.Flags&syscall.O_ACCMODE != syscall.O_RDONLY || input.Flags&syscall.O_TRUNC != 0 {
		// An open that may write completes a partly cached fileset file
		// first (write-back sends files whole); one that reads fetches
		// what its reads need (Read). A read-only fileset refuses it
		// before anything is fetched (readonly.go).
		if err := fs.refuseReadOnly(ctx, "open", gin); err != nil {
			return fs.status("open", err)
		}
		if err := fs.complete(ctx, gin); err != nil {
			return fs.status("open", err)
		}
	}
	h, mode, in, err := fs.c.OpenIno(ctx, meta.Ino(input.NodeId), int(input.Flags))
	if err != nil {
		return fs.status("open", err)
	}
	if in.IsDir() {
		h.Release(ctx)
		return gofuse.Status(syscall.EISDIR)
	}
	fs.opened(h, in.Ino, mode, false, out)
	if in.Gateway == nil && gin != nil {
		in.Gateway = gin.Gateway // attributes from a cache tier may not carry it
	}
	if fs.opts.Gateway != nil && in.IsRegular() && in.Gateway != nil {
		fs.mu.Lock()
		fs.mu.fileset[out.Fh] = in.Gateway.Fileset
		if needs(&in) {
			fs.mu.partial[out.Fh] = newPartial(&in)
		}
		fs.mu.Unlock()
	}
	return gofuse.OK
}

func (fs *FS) Read(cancel <-chan struct{}, input *gofuse.ReadIn, buf []byte) (gofuse.ReadResult, gofuse.Status) {
	h := fs.file(input.Fh)
	if h == nil {
		return nil, gofuse.EBADF
	}
	p, root := fs.partialOf(input.Fh)
	fetched := false
	if p != nil {
		var err error
		if fetched, err = p.ready(ctxOf(cancel, &input.InHeader), fs, int64(input.Offset), int64(input.Size)); err != nil {
			return nil, fs.status("read", err)
		}
	}
	n, err := h.Read(ctxOf(cancel, &input.InHeader), int64(input.Offset), buf[:min(len(buf), int(input.Size))])
	if err != nil {
		return nil, fs.status("read", err)
	}
	fs.countRead(root, n, fetched)
	return gofuse.ReadResultData(buf[:n]), gofuse.OK
}

func (fs *FS) Write(cancel <-chan struct{}, input *gofuse.WriteIn, data []byte) (uint32, gofuse.Status) {
	h := fs.file(input.Fh)
	if h == nil {
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
	n, err := h.Write(ctx, int64(input.Offset), data)
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
	delete(fs.mu.partial, input.Fh)
	delete(fs.mu.fileset, input.Fh)
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

// Tmpfile makes and opens an unnamed file in the directory (open(2) with
// O_TMPFILE). The inode starts as an orphan (Nlink 0): it is reaped when
// its last handle here is released, unless linkat gave it a name first
// (the kernel allows that unless O_EXCL was given).
func (fs *FS) Tmpfile(cancel <-chan struct{}, input *gofuse.CreateIn, out *gofuse.CreateOut) gofuse.Status {
	ctx := ctxOf(cancel, &input.InHeader)
	mark := fs.c.CallbackMark()
	in, err := fs.api.Create(ctx, meta.CreateReq{
		Parent:  meta.Ino(input.NodeId),
		Mode:    input.Mode&^syscall.S_IFMT | syscall.S_IFREG,
		Uid:     input.Uid,
		Gid:     input.Gid,
		Tmpfile: true,
		Open:    true, // held like a create's open: the last release reaps it
	})
	if err != nil {
		return fs.status("tmpfile", err)
	}
	fs.fillEntry(&in, &out.EntryOut)
	st := fs.open(cancel, &input.InHeader, in, mark, input.Flags, true, &out.OpenOut)
	// Reaped now if the open failed, else at the last release.
	if err := fs.c.Unlinked(ctx, in.Ino); err != nil {
		fs.log.Warn("tmpfile: reap failed", "inode", in.Ino, "err", err)
	}
	return st
}
