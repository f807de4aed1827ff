package vfs

import (
	"context"
	"sync"
	"syscall"

	"tessera/internal/meta"
)

// dirPage is how many entries one ReadDir call to the meta service returns.
const dirPage = 1024

// Dir is an open directory: the entries listed so far, in name order,
// loaded page by page. Offsets (cookies) handed out are positions in this
// list (0 ".", 1 "..", then entries), so a listing resumed at any offset
// returned goes on from there while the handle is open; offset 0 lists
// afresh.
type Dir struct {
	v   *FS
	ino meta.Ino
	mu  sync.Mutex
	ent []meta.DirEntry
	// more: the meta service has entries after the last one loaded.
	more bool
}

// DirEntry is an entry of an open directory's listing.
type DirEntry struct {
	// Off is the offset of the entry after this one: where a listing
	// resumed after this entry starts.
	Off  uint64
	Name string
	Ino  meta.Ino // 0 for ".."
	Mode uint32   // the type bits (S_IFDIR for "." and "..")
	// Inode holds the entry's attributes (through Overlay) when the
	// listing asked for them (plus), nil for "." and "..".
	Inode *meta.Inode
}

// Ino is the directory's inode number.
func (d *Dir) Ino() meta.Ino { return d.ino }

// OpenDir opens directory ino (read permission needed; ENOTDIR if it is
// none; in a fileset it is listed at home first). The open is recorded
// with the meta service (as a file's), so that a directory removed or
// renamed over while open keeps answering fstat (with nlink 0) until
// ReleaseDir.
func (v *FS) OpenDir(ctx context.Context, c Cred, ino meta.Ino) (uint64, error) {
	if _, err := v.dir(ctx, c, "opendir", ino, MayRead); err != nil {
		return 0, err
	}
	if _, err := v.Fill(ctx, ino); err != nil {
		return 0, err
	}
	in, err := v.c.HoldOpenDir(ctx, ino)
	if err != nil {
		return 0, err
	}
	if !in.IsDir() {
		v.releaseDir(in.Ino)
		return 0, errorf("opendir", ino, syscall.ENOTDIR)
	}
	t := &v.handles
	t.mu.Lock()
	defer t.mu.Unlock()
	t.next++
	t.dirs[t.next] = &Dir{v: v, ino: in.Ino, more: true}
	return t.next, nil
}

// Dir returns open directory fh (nil if there is none: EBADF).
func (v *FS) Dir(fh uint64) *Dir {
	v.handles.mu.Lock()
	defer v.handles.mu.Unlock()
	return v.handles.dirs[fh]
}

// List passes the entries from offset off on to emit, in order, until
// emit returns false or the listing ends; with plus each entry carries
// its attributes. Offset 0 lists afresh.
func (d *Dir) List(ctx context.Context, off uint64, plus bool, emit func(DirEntry) bool) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if off == 0 {
		d.ent, d.more = nil, true
	}
	for pos := off; ; pos++ {
		e := DirEntry{Off: pos + 1, Mode: syscall.S_IFDIR}
		switch pos {
		case 0:
			e.Name, e.Ino = ".", d.ino
		case 1:
			e.Name, e.Ino = "..", 0
		default:
			i := int(pos - 2)
			if err := d.ensureLocked(ctx, i, plus); err != nil {
				return err
			}
			if i >= len(d.ent) {
				return nil
			}
			ent := &d.ent[i]
			e.Name, e.Ino, e.Mode = ent.Name, ent.Ino, ent.Mode
			if plus && ent.Inode != nil {
				in := *ent.Inode
				d.v.c.Overlay(&in)
				e.Inode = &in
			}
		}
		if !emit(e) {
			return nil
		}
	}
}

func (d *Dir) ensureLocked(ctx context.Context, idx int, plus bool) error {
	for idx >= len(d.ent) && d.more {
		after := ""
		if len(d.ent) > 0 {
			after = d.ent[len(d.ent)-1].Name
		}
		page, more, err := d.v.api.ReadDir(ctx, d.ino, after, dirPage, plus)
		if err != nil {
			return err
		}
		for i := range page {
			d.v.names.put(d.ino, page[i].Name, page[i].Ino, page[i].Mode)
		}
		d.ent = append(d.ent, page...)
		d.more = more
	}
	return nil
}

// ReleaseDir closes open directory fh.
func (v *FS) ReleaseDir(fh uint64) {
	t := &v.handles
	t.mu.Lock()
	d := t.dirs[fh]
	delete(t.dirs, fh)
	t.mu.Unlock()
	if d != nil {
		v.releaseDir(d.ino)
	}
}

// releaseDir drops the open of directory ino recorded with the meta
// service (a release has no request to take a context from).
func (v *FS) releaseDir(ino meta.Ino) {
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	if err := v.c.ReleaseOpen(ctx, ino); err != nil {
		v.log.Warn("releasedir: telling the meta service failed", "inode", ino, "err", err)
	}
}
