package fuse

import (
	gofuse "github.com/hanwen/go-fuse/v2/fuse"

	"tessera/internal/meta"
)

// Extended attributes go to vfs (vfs.FS.GetXattr and the rest: POSIX ACL
// names, the namespaces' rules); this file sizes the kernel's buffers.

func (fs *FS) GetXAttr(cancel <-chan struct{}, header *gofuse.InHeader, attr string, dest []byte) (uint32, gofuse.Status) {
	v, err := fs.v.GetXattr(ctxOf(cancel, header), cred(header), meta.Ino(header.NodeId), attr)
	if err != nil {
		return 0, fs.status("getxattr", err)
	}
	if len(dest) == 0 {
		return uint32(len(v)), gofuse.OK
	}
	if len(dest) < len(v) {
		return uint32(len(v)), gofuse.ERANGE
	}
	return uint32(copy(dest, v)), gofuse.OK
}

func (fs *FS) ListXAttr(cancel <-chan struct{}, header *gofuse.InHeader, dest []byte) (uint32, gofuse.Status) {
	names, err := fs.v.ListXattr(ctxOf(cancel, header), cred(header), meta.Ino(header.NodeId))
	if err != nil {
		return 0, fs.status("listxattr", err)
	}
	n := 0
	for _, name := range names {
		n += len(name) + 1
	}
	if len(dest) == 0 {
		return uint32(n), gofuse.OK
	}
	if len(dest) < n {
		return uint32(n), gofuse.ERANGE
	}
	off := 0
	for _, name := range names {
		off += copy(dest[off:], name)
		dest[off] = 0
		off++
	}
	return uint32(n), gofuse.OK
}

func (fs *FS) SetXAttr(cancel <-chan struct{}, input *gofuse.SetXAttrIn, attr string, data []byte) gofuse.Status {
	err := fs.v.SetXattr(ctxOf(cancel, &input.InHeader), cred(&input.InHeader), meta.Ino(input.NodeId), attr, data, input.Flags)
	return fs.status("setxattr", err)
}

func (fs *FS) RemoveXAttr(cancel <-chan struct{}, header *gofuse.InHeader, attr string) gofuse.Status {
	return fs.status("removexattr", fs.v.RemoveXattr(ctxOf(cancel, header), cred(header), meta.Ino(header.NodeId), attr))
}
