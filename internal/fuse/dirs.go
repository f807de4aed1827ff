package fuse

import (
	"context"
	"sync"
	"syscall"
	"time"

	gofuse "github.com/hanwen/go-fuse/v2/fuse"

	"tessera/internal/meta"
)

// dirPage is how many entries one ReadDir call to the meta service returns.
const dirPage = 1024

// dirHandle is an open directory: the entries listed so far, in name order,
// loaded page by page. Offsets handed to the kernel are positions in this
// list (0 ".", 1 "..", then entries), so seekdir to any returned offset works
// while the handle is open; rewinding to 0 lists afresh.
type dirHandle struct {
	ino meta.Ino
	mu  sync.Mutex
	ent []meta.DirEntry
	// more: the meta service has entries after the last one loaded.
	more bool
}

func (d *dirHandle) ensureLocked(ctx context.Context, api meta.API, idx int, plus bool) error {
	for idx >= len(d.ent) && d.more {
		after := ""
		if len(d.ent) > 0 {
			after = d.ent[len(d.ent)-1].Name
		}
		page, more, err := api.ReadDir(ctx, d.ino, after, dirPage, plus)
		if err != nil {
			return err
		}
		d.ent = append(d.ent, page...)
		d.more = more
	}
	return nil
}

// OpenDir records the open with the meta service (as a file's), so that a
// directory removed or renamed over while open here keeps answering fstat
// (with nlink 0) until ReleaseDir.
func (fs *FS) OpenDir(cancel <-chan struct{}, input *gofuse.OpenIn, out *gofuse.OpenOut) gofuse.Status {
	ctx := ctxOf(cancel, &input.InHeader)
	if _, err := fs.fill(ctx, meta.Ino(input.NodeId)); err != nil {
		return fs.status("opendir", err)
	}
	in, err := fs.c.HoldOpenDir(ctx, meta.Ino(input.NodeId))
	if err != nil {
		return fs.status("opendir", err)
	}
	if !in.IsDir() {
		fs.releaseDir(in.Ino)
		return gofuse.Status(syscall.ENOTDIR)
	}
	fs.mu.Lock()
	fs.mu.next++
	out.Fh = fs.mu.next
	fs.mu.dirs[out.Fh] = &dirHandle{ino: in.Ino, more: true}
	fs.mu.Unlock()
	return gofuse.OK
}

func (fs *FS) dir(fh uint64) *dirHandle {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.mu.dirs[fh]
}

func (fs *FS) ReadDir(cancel <-chan struct{}, input *gofuse.ReadIn, out *gofuse.DirEntryList) gofuse.Status {
	return fs.readDir(cancel, input, out, false)
}

func (fs *FS) ReadDirPlus(cancel <-chan struct{}, input *gofuse.ReadIn, out *gofuse.DirEntryList) gofuse.Status {
	return fs.readDir(cancel, input, out, true)
}

func (fs *FS) readDir(cancel <-chan struct{}, input *gofuse.ReadIn, out *gofuse.DirEntryList, plus bool) gofuse.Status {
	d := fs.dir(input.Fh)
	if d == nil {
		return gofuse.EBADF
	}
	ctx := ctxOf(cancel, &input.InHeader)
	d.mu.Lock()
	defer d.mu.Unlock()
	if input.Offset == 0 {
		d.ent, d.more = nil, true
	}
	for pos := input.Offset; ; pos++ {
		e := gofuse.DirEntry{Off: pos + 1, Mode: syscall.S_IFDIR}
		var ent *meta.DirEntry
		switch pos {
		case 0:
			e.Name, e.Ino = ".", uint64(d.ino)
		case 1:
			e.Name, e.Ino = "..", 0
		default:
			i := int(pos - 2)
			if err := d.ensureLocked(ctx, fs.api, i, plus); err != nil {
				return fs.status("readdir", err)
			}
			if i >= len(d.ent) {
				return gofuse.OK
			}
			ent = &d.ent[i]
			e.Name, e.Ino, e.Mode = ent.Name, uint64(ent.Ino), ent.Mode
		}
		if !plus {
			if !out.AddDirEntry(e) {
				return gofuse.OK
			}
			continue
		}
		eo := out.AddDirLookupEntry(e)
		if eo == nil {
			return gofuse.OK
		}
		if ent != nil && ent.Inode != nil {
			in := *ent.Inode
			fs.fillEntry(&in, eo)
		}
	}
}

func (fs *FS) ReleaseDir(input *gofuse.ReleaseIn) {
	fs.mu.Lock()
	d := fs.mu.dirs[input.Fh]
	delete(fs.mu.dirs, input.Fh)
	fs.mu.Unlock()
	if d != nil {
		fs.releaseDir(d.ino)
	}
}

// releaseDir drops the open of directory ino recorded with the meta
// service (ReleaseDir has no request to take a context from).
func (fs *FS) releaseDir(ino meta.Ino) {
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	if err := fs.c.ReleaseOpen(ctx, ino); err != nil {
		fs.log.Warn("releasedir: telling the meta service failed", "inode", ino, "err", err)
	}
}

// releaseTimeout bounds ReleaseDir's call to the meta service: the service
// forgets the open anyway when the session ends.
const releaseTimeout = 30 * time.Second

// FsyncDir makes the namespace changes acknowledged so far durable (they
// survive a crash of the meta service when acknowledged, of its machine
// once synced).
func (fs *FS) FsyncDir(cancel <-chan struct{}, input *gofuse.FsyncIn) gofuse.Status {
	return fs.status("fsyncdir", fs.c.Sync(ctxOf(cancel, &input.InHeader)))
}
