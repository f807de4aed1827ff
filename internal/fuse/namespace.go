package fuse

import (
	"errors"
	"syscall"

	gofuse "github.com/hanwen/go-fuse/v2/fuse"

	"tessera/internal/meta"
	"tessera/internal/vfs"
)

func (fs *FS) Lookup(cancel <-chan struct{}, header *gofuse.InHeader, name string, out *gofuse.EntryOut) gofuse.Status {
	ctx, parent := ctxOf(cancel, header), meta.Ino(header.NodeId)
	if _, err := fs.v.Fill(ctx, parent); err != nil {
		return fs.status("lookup", err)
	}
	in, err := fs.v.Lookup(ctx, cred(header), parent, name)
	if err != nil {
		return fs.status("lookup", err)
	}
	fs.fillEntry(&in, out)
	return gofuse.OK
}

// Forget needs no bookkeeping: node ids are inode numbers.
func (fs *FS) Forget(nodeid, nlookup uint64) {}

func (fs *FS) GetAttr(cancel <-chan struct{}, input *gofuse.GetAttrIn, out *gofuse.AttrOut) gofuse.Status {
	in, err := fs.v.GetAttr(ctxOf(cancel, &input.InHeader), meta.Ino(input.NodeId))
	if err != nil {
		return fs.status("getattr", err)
	}
	fillAttr(&in, &out.Attr)
	out.SetTimeout(fs.attrTTL(&in))
	return gofuse.OK
}

func (fs *FS) SetAttr(cancel <-chan struct{}, input *gofuse.SetAttrIn, out *gofuse.AttrOut) gofuse.Status {
	ctx := ctxOf(cancel, &input.InHeader)
	s := vfs.SetAttr{KillSuidgid: input.Valid&gofuse.FATTR_KILL_SUIDGID != 0}
	if input.Valid&gofuse.FATTR_SIZE != 0 {
		s.Valid |= meta.SetSize
		s.Size = input.Size
	}
	if input.Valid&gofuse.FATTR_MODE != 0 {
		s.Valid |= meta.SetMode
		s.Mode = input.Mode
	}
	if input.Valid&gofuse.FATTR_UID != 0 {
		s.Valid |= meta.SetUid
		s.Uid = input.Uid
	}
	if input.Valid&gofuse.FATTR_GID != 0 {
		s.Valid |= meta.SetGid
		s.Gid = input.Gid
	}
	if input.Valid&gofuse.FATTR_ATIME != 0 {
		s.Valid |= meta.SetAtime
		s.Atime = joinNs(input.Atime, input.Atimensec)
		s.AtimeNow = input.Valid&gofuse.FATTR_ATIME_NOW != 0
	}
	if input.Valid&gofuse.FATTR_MTIME != 0 {
		s.Valid |= meta.SetMtime
		s.Mtime = joinNs(input.Mtime, input.Mtimensec)
		s.MtimeNow = input.Valid&gofuse.FATTR_MTIME_NOW != 0
	}
	if input.Valid&gofuse.FATTR_CTIME != 0 {
		s.Valid |= meta.SetCtime
		s.Ctime = joinNs(input.Ctime, input.Ctimensec)
	}
	in, err := fs.v.SetAttr(ctx, cred(&input.InHeader), meta.Ino(input.NodeId), s)
	if err != nil {
		op := "setattr"
		if s.Valid&meta.SetSize != 0 {
			op = "truncate"
		}
		return fs.status(op, err)
	}
	fillAttr(&in, &out.Attr)
	out.SetTimeout(fs.attrTTL(&in))
	return gofuse.OK
}

func (fs *FS) create(cancel <-chan struct{}, header *gofuse.InHeader, req meta.CreateReq, out *gofuse.EntryOut) gofuse.Status {
	req.Parent = meta.Ino(header.NodeId)
	in, err := fs.v.Create(ctxOf(cancel, header), cred(header), req)
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
	t, err := fs.v.Readlink(ctxOf(cancel, header), meta.Ino(header.NodeId))
	if err != nil {
		return nil, fs.status("readlink", err)
	}
	return []byte(t), gofuse.OK
}

func (fs *FS) Unlink(cancel <-chan struct{}, header *gofuse.InHeader, name string) gofuse.Status {
	return fs.status("unlink", fs.v.Unlink(ctxOf(cancel, header), cred(header), meta.Ino(header.NodeId), name))
}

func (fs *FS) Rmdir(cancel <-chan struct{}, header *gofuse.InHeader, name string) gofuse.Status {
	return fs.status("rmdir", fs.v.Rmdir(ctxOf(cancel, header), cred(header), meta.Ino(header.NodeId), name))
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
	err := fs.v.Rename(ctxOf(cancel, &input.InHeader), cred(&input.InHeader), meta.Ino(input.NodeId), oldName, meta.Ino(input.Newdir), newName, flags)
	return fs.status("rename", err)
}

func (fs *FS) Link(cancel <-chan struct{}, input *gofuse.LinkIn, name string, out *gofuse.EntryOut) gofuse.Status {
	in, err := fs.v.Link(ctxOf(cancel, &input.InHeader), cred(&input.InHeader), meta.Ino(input.Oldnodeid), meta.Ino(input.NodeId), name)
	if err != nil {
		return fs.status("link", err)
	}
	fs.fillEntry(&in, out)
	return gofuse.OK
}

// Access checks the mode bits (vfs.FS.Access) with the caller's uid and
// gid (FUSE does not send the supplementary groups); with
// default_permissions the kernel checks before asking, so this serves
// access(2) callers only.
func (fs *FS) Access(cancel <-chan struct{}, input *gofuse.AccessIn) gofuse.Status {
	c := vfs.Cred{Uid: input.Uid, Gid: input.Gid}
	_, err := fs.v.Access(ctxOf(cancel, &input.InHeader), c, meta.Ino(input.NodeId), input.Mask)
	if errors.Is(err, syscall.EACCES) {
		return gofuse.EACCES
	}
	return fs.status("access", err)
}
