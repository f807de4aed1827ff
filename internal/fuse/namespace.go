package fuse

import (
	"context"
	"syscall"
	"time"

	gofuse "github.com/hanwen/go-fuse/v2/fuse"

	"tessera/internal/meta"
	"tessera/internal/meta/metawait"
)

func (fs *FS) Lookup(cancel <-chan struct{}, header *gofuse.InHeader, name string, out *gofuse.EntryOut) gofuse.Status {
	ctx, parent := ctxOf(cancel, header), meta.Ino(header.NodeId)
	if _, err := fs.fill(ctx, parent); err != nil {
		return fs.status("lookup", err)
	}
	var in meta.Inode
	var err error
	if cs, ok := fs.api.(cachedStat); ok {
		in, err = cs.CachedLookup(ctx, parent, name)
	} else {
		in, err = fs.api.Lookup(ctx, parent, name)
	}
	if err != nil {
		return fs.status("lookup", err)
	}
	fs.fillEntry(&in, out)
	return gofuse.OK
}

// cachedStat is implemented by a client's meta API with a cache tier: the
// stats of LOOKUP and GETATTR may be answered from it (client.tierAPI).
type cachedStat interface {
	CachedLookup(ctx context.Context, parent meta.Ino, name string) (meta.Inode, error)
	CachedGetAttr(ctx context.Context, ino meta.Ino) (meta.Inode, error)
}

// Forget needs no bookkeeping: node ids are inode numbers.
func (fs *FS) Forget(nodeid, nlookup uint64) {}

func (fs *FS) GetAttr(cancel <-chan struct{}, input *gofuse.GetAttrIn, out *gofuse.AttrOut) gofuse.Status {
	ctx, ino := ctxOf(cancel, &input.InHeader), meta.Ino(input.NodeId)
	fallback, canFall := fs.c.StatFallback(ino)
	if canFall {
		// An open file whose policy serves cached data answers from what
		// it has while the meta service is unavailable.
		ctx = metawait.NoWait(ctx)
	}
	var in meta.Inode
	var err error
	if cs, ok := fs.api.(cachedStat); ok {
		in, err = cs.CachedGetAttr(ctx, ino)
	} else {
		in, err = fs.api.GetAttr(ctx, ino)
	}
	if err != nil && canFall && meta.Unavailable(err) {
		in, err = fallback, nil
	}
	if err != nil {
		return fs.status("getattr", err)
	}
	fs.c.Overlay(&in)
	fillAttr(&in, &out.Attr)
	out.SetTimeout(fs.attrTTL(&in))
	return gofuse.OK
}

func (fs *FS) SetAttr(cancel <-chan struct{}, input *gofuse.SetAttrIn, out *gofuse.AttrOut) gofuse.Status {
	ctx := ctxOf(cancel, &input.InHeader)
	ino := meta.Ino(input.NodeId)
	// The current attributes are needed for a truncate and to clear the
	// set-id bits of a mode not given; otherwise the SetAttr returns them
	// (tar's futimens, fchown and fchmod: one meta call each, not two).
	var in meta.Inode
	var err error
	if input.Valid&(gofuse.FATTR_SIZE|gofuse.FATTR_KILL_SUIDGID) != 0 {
		if in, err = fs.api.GetAttr(ctx, ino); err != nil {
			return fs.status("setattr", err)
		}
	}
	if input.Valid&gofuse.FATTR_SIZE != 0 {
		if in.IsDir() {
			return gofuse.Status(syscall.EISDIR)
		}
		if fs.opts.Gateway != nil {
			if err := fs.refuseReadOnly(ctx, "truncate", &in); err != nil {
				return fs.status("truncate", err)
			}
		}
		if fs.opts.Gateway != nil && needs(&in) {
			// A partly cached fileset file is completed before it changes.
			if err := fs.complete(ctx, &in); err != nil {
				return fs.status("truncate", err)
			}
			if in, err = fs.api.GetAttr(ctx, ino); err != nil {
				return fs.status("truncate", err)
			}
		}
		if in, err = fs.c.Truncate(ctx, in, int64(input.Size)); err != nil {
			return fs.status("truncate", err)
		}
	}
	var req meta.SetAttrReq
	now := time.Now().UnixNano()
	if input.Valid&gofuse.FATTR_MODE != 0 {
		req.Valid |= meta.SetMode
		req.Mode = input.Mode &^ syscall.S_IFMT
	}
	if input.Valid&gofuse.FATTR_KILL_SUIDGID != 0 {
		if req.Valid&meta.SetMode == 0 {
			req.Valid |= meta.SetMode
			req.Mode = in.Mode &^ syscall.S_IFMT
		}
		req.Mode &^= syscall.S_ISUID
		if req.Mode&syscall.S_IXGRP != 0 {
			req.Mode &^= syscall.S_ISGID
		}
	}
	if input.Valid&gofuse.FATTR_UID != 0 {
		req.Valid |= meta.SetUid
		req.Uid = input.Uid
	}
	if input.Valid&gofuse.FATTR_GID != 0 {
		req.Valid |= meta.SetGid
		req.Gid = input.Gid
	}
	if input.Valid&gofuse.FATTR_ATIME != 0 {
		req.Valid |= meta.SetAtime
		req.Atime = joinNs(input.Atime, input.Atimensec)
		if input.Valid&gofuse.FATTR_ATIME_NOW != 0 {
			req.Atime = now
		}
	}
	if input.Valid&gofuse.FATTR_MTIME != 0 {
		req.Valid |= meta.SetMtime
		req.Mtime = joinNs(input.Mtime, input.Mtimensec)
		if input.Valid&gofuse.FATTR_MTIME_NOW != 0 {
			req.Mtime = now
		}
	}
	if input.Valid&gofuse.FATTR_CTIME != 0 {
		req.Valid |= meta.SetCtime
		req.Ctime = joinNs(input.Ctime, input.Ctimensec)
	}
	if req.Valid&meta.SetMtime != 0 {
		fs.c.MtimeSet(ino)
	}
	switch {
	case req.Valid != 0:
		if in, err = fs.api.SetAttr(ctx, ino, req); err != nil {
			return fs.status("setattr", err)
		}
	case in.Ino == 0:
		if in, err = fs.api.GetAttr(ctx, ino); err != nil {
			return fs.status("setattr", err)
		}
	}
	fs.c.Overlay(&in)
	fillAttr(&in, &out.Attr)
	out.SetTimeout(fs.attrTTL(&in))
	return gofuse.OK
}

func (fs *FS) create(cancel <-chan struct{}, header *gofuse.InHeader, req meta.CreateReq, out *gofuse.EntryOut) gofuse.Status {
	req.Parent = meta.Ino(header.NodeId)
	req.Uid, req.Gid = header.Uid, header.Gid
	in, err := fs.api.Create(ctxOf(cancel, header), req)
	if err != nil {
		return fs.status("create", err)
	}
	fs.fillEntry(&in, out)
	return gofuse.OK
}

func (fs *FS) Mknod(cancel <-chan struct{}, input *gofuse.MknodIn, name string, out *gofuse.EntryOut) gofuse.Status {
	return fs.create(cancel, &input.InHeader, meta.CreateReq{Name: name, Mode: input.Mode, Rdev: input.Rdev, Excl: true}, out)
}

func (fs *FS) Mkdir(cancel <-chan struct{}, input *gofuse.MkdirIn, name string, out *gofuse.EntryOut) gofuse.Status {
	mode := input.Mode&^syscall.S_IFMT | syscall.S_IFDIR
	return fs.create(cancel, &input.InHeader, meta.CreateReq{Name: name, Mode: mode, Excl: true}, out)
}

func (fs *FS) Symlink(cancel <-chan struct{}, header *gofuse.InHeader, target string, name string, out *gofuse.EntryOut) gofuse.Status {
	return fs.create(cancel, header, meta.CreateReq{Name: name, Mode: syscall.S_IFLNK | 0o777, Target: target, Excl: true}, out)
}

func (fs *FS) Readlink(cancel <-chan struct{}, header *gofuse.InHeader) ([]byte, gofuse.Status) {
	in, err := fs.api.GetAttr(ctxOf(cancel, header), meta.Ino(header.NodeId))
	if err != nil {
		return nil, fs.status("readlink", err)
	}
	if in.Mode&syscall.S_IFMT != syscall.S_IFLNK {
		return nil, gofuse.EINVAL
	}
	return []byte(in.Target), gofuse.OK
}

func (fs *FS) Unlink(cancel <-chan struct{}, header *gofuse.InHeader, name string) gofuse.Status {
	_, err := fs.c.Unlink(ctxOf(cancel, header), meta.Ino(header.NodeId), name)
	return fs.status("unlink", err)
}

func (fs *FS) Rmdir(cancel <-chan struct{}, header *gofuse.InHeader, name string) gofuse.Status {
	return fs.status("rmdir", fs.api.Rmdir(ctxOf(cancel, header), meta.Ino(header.NodeId), name))
}

func (fs *FS) Rename(cancel <-chan struct{}, input *gofuse.RenameIn, oldName string, newName string) gofuse.Status {
	var flags uint32
	if input.Flags&1 != 0 { // RENAME_NOREPLACE
		flags |= meta.RenameNoReplace
	}
	if input.Flags&2 != 0 { // RENAME_EXCHANGE
		flags |= meta.RenameExchange
	}
	if input.Flags&^3 != 0 {
		return gofuse.EINVAL
	}
	ctx := ctxOf(cancel, &input.InHeader)
	replaced, err := fs.api.Rename(ctx, meta.Ino(input.NodeId), oldName, meta.Ino(input.Newdir), newName, flags)
	if err != nil {
		return fs.status("rename", err)
	}
	if replaced.Ino != 0 && replaced.Nlink == 0 && !replaced.IsDir() {
		if err := fs.c.Unlinked(ctx, replaced.Ino); err != nil {
			fs.log.Warn("reap after rename failed", "inode", replaced.Ino, "err", err)
		}
	}
	return gofuse.OK
}

func (fs *FS) Link(cancel <-chan struct{}, input *gofuse.LinkIn, name string, out *gofuse.EntryOut) gofuse.Status {
	in, err := fs.api.Link(ctxOf(cancel, &input.InHeader), meta.Ino(input.Oldnodeid), meta.Ino(input.NodeId), name)
	if err != nil {
		return fs.status("link", err)
	}
	fs.fillEntry(&in, out)
	return gofuse.OK
}

// Access is answered from the mode bits; with default_permissions the kernel
// checks before asking, so this serves access(2) callers only.
func (fs *FS) Access(cancel <-chan struct{}, input *gofuse.AccessIn) gofuse.Status {
	in, err := fs.api.GetAttr(ctxOf(cancel, &input.InHeader), meta.Ino(input.NodeId))
	if err != nil {
		return fs.status("access", err)
	}
	if input.Uid == 0 {
		return gofuse.OK
	}
	perm := in.Mode & 0o7
	if input.Uid == in.Uid {
		perm = in.Mode >> 6 & 0o7
	} else if input.Gid == in.Gid {
		perm = in.Mode >> 3 & 0o7
	}
	if input.Mask&perm != input.Mask {
		return gofuse.EACCES
	}
	return gofuse.OK
}
