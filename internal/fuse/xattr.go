package fuse

import (
	"strings"
	"syscall"

	gofuse "github.com/hanwen/go-fuse/v2/fuse"

	"tessera/internal/meta"
)

// aclName reports POSIX ACL attributes, which need kernel ACL support that
// this mount does not turn on.
func aclName(name string) bool { return strings.HasPrefix(name, "system.posix_acl_") }

func (fs *FS) GetXAttr(cancel <-chan struct{}, header *gofuse.InHeader, attr string, dest []byte) (uint32, gofuse.Status) {
	if aclName(attr) {
		return 0, gofuse.Status(syscall.ENODATA)
	}
	v, err := fs.c.GetXattr(ctxOf(cancel, header), meta.Ino(header.NodeId), attr)
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
	names, err := fs.api.ListXattr(ctxOf(cancel, header), meta.Ino(header.NodeId))
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
	if aclName(attr) {
		return gofuse.Status(syscall.EOPNOTSUPP)
	}
	return fs.status("setxattr", fs.c.SetXattr(ctxOf(cancel, &input.InHeader), meta.Ino(input.NodeId), attr, data, input.Flags))
}

func (fs *FS) RemoveXAttr(cancel <-chan struct{}, header *gofuse.InHeader, attr string) gofuse.Status {
	return fs.status("removexattr", fs.c.RemoveXattr(ctxOf(cancel, header), meta.Ino(header.NodeId), attr))
}
