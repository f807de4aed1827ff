package fuse

import (
	gofuse "github.com/hanwen/go-fuse/v2/fuse"

	"tessera/internal/meta"
	"tessera/internal/vfs"
)

// Open directories live in vfs (vfs.FS.OpenDir, vfs.Dir.List): the
// offsets handed to the kernel are vfs's positions in the listing, so
// seekdir to any returned offset works while the directory is open.

// OpenDir records the open with the meta service (vfs.FS.OpenDir).
func (fs *FS) OpenDir(cancel <-chan struct{}, input *gofuse.OpenIn, out *gofuse.OpenOut) gofuse.Status {
	fh, err := fs.v.OpenDir(ctxOf(cancel, &input.InHeader), cred(&input.InHeader), meta.Ino(input.NodeId))
	if err != nil {
		return fs.status("opendir", err)
	}
	out.Fh = fh
	return gofuse.OK
}

func (fs *FS) ReadDir(cancel <-chan struct{}, input *gofuse.ReadIn, out *gofuse.DirEntryList) gofuse.Status {
	return fs.readDir(cancel, input, out, false)
}

func (fs *FS) ReadDirPlus(cancel <-chan struct{}, input *gofuse.ReadIn, out *gofuse.DirEntryList) gofuse.Status {
	return fs.readDir(cancel, input, out, true)
}

func (fs *FS) readDir(cancel <-chan struct{}, input *gofuse.ReadIn, out *gofuse.DirEntryList, plus bool) gofuse.Status {
	d := fs.v.Dir(input.Fh)
	if d == nil {
		return gofuse.EBADF
	}
	err := d.List(ctxOf(cancel, &input.InHeader), input.Offset, plus, func(ve vfs.DirEntry) bool {
		e := gofuse.DirEntry{Off: ve.Off, Name: ve.Name, Ino: uint64(ve.Ino), Mode: ve.Mode}
		if !plus {
			return out.AddDirEntry(e)
		}
		eo := out.AddDirLookupEntry(e)
		if eo == nil {
			return false
		}
		if ve.Inode != nil {
			fs.fillEntry(ve.Inode, eo)
		}
		return true
	})
	return fs.status("readdir", err)
}

func (fs *FS) ReleaseDir(input *gofuse.ReleaseIn) { fs.v.ReleaseDir(input.Fh) }

// FsyncDir makes the namespace changes acknowledged so far durable (they
// survive a crash of the meta service when acknowledged, of its machine
// once synced).
func (fs *FS) FsyncDir(cancel <-chan struct{}, input *gofuse.FsyncIn) gofuse.Status {
	return fs.status("fsyncdir", fs.v.Sync(ctxOf(cancel, &input.InHeader)))
}
