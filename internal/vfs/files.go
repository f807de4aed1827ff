package vfs

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"

	"tessera/internal/client"
	"tessera/internal/meta"
)

// Open files: a front end with open and close (FUSE) opens a file once
// and reads and writes through its handle, named by a number (Opened.Fh)
// until Release. The open is cluster state: it is recorded with the meta
// service, so a file removed or renamed over while open keeps answering
// until the last release. The fileset rules apply to every open (fill,
// read-only, complete before a write open, partial reads: fileset.go).

// handles is the table of open files and directories, by handle number.
type handles struct {
	mu    sync.Mutex
	next  uint64
	files map[uint64]*File
	dirs  map[uint64]*Dir
}

func (t *handles) init() {
	t.files = make(map[uint64]*File)
	t.dirs = make(map[uint64]*Dir)
}

// File is an open file.
type File struct {
	v    *FS
	ino  meta.Ino
	h    *client.Handle
	cred Cred
	// flags are the open's flags (O_ACCMODE and the rest).
	flags uint32
	// partial: the file is in a fileset and not cached whole; its reads
	// fetch the blocks they need first (fileset.go). nil otherwise.
	partial *partial
	// fileset is the root of the file's fileset (0 if none), whose read
	// counts its reads add to (filesetreads.go).
	fileset meta.Ino
	// killed: the set-id bits were cleared by this handle's first write
	// (callers not Checked).
	killed atomic.Bool
}

// Opened is what an open or create returns.
type Opened struct {
	Fh   uint64 // the handle's number (File finds it)
	File *File
	// Inode is the file's attributes at the open (a create's through
	// Overlay; an open's as the meta service answered).
	Inode meta.Inode
	// Mode says how a kernel may cache the file's pages
	// (client.OpenMode).
	Mode client.OpenMode
	// Created: the create made the inode (nothing of it can be cached).
	Created bool
}

// Ino is the file's inode number.
func (f *File) Ino() meta.Ino { return f.ino }

// Size is the file's size as this handle sees it.
func (f *File) Size() int64 { return f.h.Size() }

// writes reports whether open flags may change the file.
func writes(flags uint32) bool {
	return flags&syscall.O_ACCMODE != syscall.O_RDONLY || flags&syscall.O_TRUNC != 0
}

// accessMask is the permission an open with flags needs.
func accessMask(flags uint32) uint32 {
	var m uint32
	switch flags & syscall.O_ACCMODE {
	case syscall.O_RDONLY:
		m = MayRead
	case syscall.O_WRONLY:
		m = MayWrite
	default:
		m = MayRead | MayWrite
	}
	if flags&syscall.O_TRUNC != 0 {
		m |= MayWrite
	}
	return m
}

// add registers f and returns its handle number.
func (v *FS) add(f *File) uint64 {
	t := &v.handles
	t.mu.Lock()
	defer t.mu.Unlock()
	t.next++
	t.files[t.next] = f
	return t.next
}

// File returns open file fh (nil if there is none: EBADF).
func (v *FS) File(fh uint64) *File {
	v.handles.mu.Lock()
	defer v.handles.mu.Unlock()
	return v.handles.files[fh]
}

// OpenFile opens file ino with open flags (read permission, write permission
// or both, as flags ask). On a read-only mount an open that may write
// gets EROFS; in a fileset the inode is filled first, and an open that may
// write is refused in a read-only fileset and completes a partly cached
// file (write-back sends files whole). O_TRUNC is not done here: the
// caller truncates (SetAttr), as the kernel does. A directory gets EISDIR.
func (v *FS) OpenFile(ctx context.Context, c Cred, ino meta.Ino, flags uint32) (Opened, error) {
	if err := v.refuseWriteOpen("open", flags); err != nil { // readonly.go
		return Opened{}, err
	}
	if !c.Checked {
		in, err := v.GetAttr(ctx, ino)
		if err != nil {
			return Opened{}, err
		}
		if in.IsDir() && flags&syscall.O_ACCMODE != syscall.O_RDONLY {
			return Opened{}, errorf("open", ino, syscall.EISDIR)
		}
		if err := check(c, "open", &in.Attr, accessMask(flags)); err != nil {
			return Opened{}, err
		}
	}
	gin, err := v.Fill(ctx, ino)
	if err != nil {
		return Opened{}, err
	}
	if writes(flags) {
		// An open that may write completes a partly cached fileset file
		// first; one that reads fetches what its reads need (Read). A
		// read-only fileset refuses it before anything is fetched.
		if err := v.refuseReadOnly(ctx, "open", gin); err != nil {
			return Opened{}, err
		}
		if err := v.complete(ctx, gin); err != nil {
			return Opened{}, err
		}
	}
	h, mode, in, err := v.c.OpenIno(ctx, ino, int(flags))
	if err != nil {
		return Opened{}, err
	}
	if in.IsDir() {
		h.Release(ctx)
		return Opened{}, errorf("open", ino, syscall.EISDIR)
	}
	f := &File{v: v, ino: in.Ino, h: h, cred: c, flags: flags}
	if in.Gateway == nil && gin != nil {
		in.Gateway = gin.Gateway // attributes from a cache tier may not carry it
	}
	if v.opts.Gateway != nil && in.IsRegular() && in.Gateway != nil {
		f.fileset = in.Gateway.Fileset
		if needs(&in) {
			f.partial = newPartial(&in)
		}
	}
	return Opened{Fh: v.add(f), File: f, Inode: in, Mode: mode}, nil
}

// CreateOpen creates and opens the regular file req.Name in req.Parent
// (open(2) with O_CREAT), owned by c: with O_EXCL in flags an existing
// file is EEXIST; without, an existing file is opened, after the checks
// an open of it gets (and EROFS in a read-only fileset for an open that
// may write). O_TRUNC truncates an existing file, changing its mtime and
// ctime also when it is empty (as ext4 does), after completing a partly
// cached fileset file.
func (v *FS) CreateOpen(ctx context.Context, c Cred, req meta.CreateReq, flags uint32) (Opened, error) {
	if v.opts.ReadOnly { // readonly.go
		return Opened{}, fmt.Errorf("create %q: the mount's identity may only read: %w", req.Name, meta.ErrReadOnly)
	}
	req.Mode = req.Mode&^syscall.S_IFMT | syscall.S_IFREG
	req.Uid, req.Gid = c.Uid, c.Gid
	req.Open = true
	excl := flags&syscall.O_EXCL != 0
	trunc := flags&syscall.O_TRUNC != 0
	if !c.Checked {
		if err := v.mayCreateOpen(ctx, c, req, flags); err != nil {
			return Opened{}, err
		}
	}
	// The truncate of O_TRUNC is done only on a file this request did not
	// make: an exclusive create first tells the two apart.
	req.Excl = excl || trunc
	mark := v.c.CallbackMark()
	in, err := v.api.Create(ctx, req)
	created := err == nil && req.Excl
	if errors.Is(err, meta.ErrExist) && !excl {
		req.Excl = false
		in, err = v.api.Create(ctx, req)
	}
	if err != nil {
		return Opened{}, err
	}
	v.noteCreated(&in)
	if !created && v.opts.Gateway != nil && writes(flags) {
		// An existing file opened for writing: refused in a read-only
		// fileset (readonly.go).
		if err := v.refuseReadOnly(ctx, "create", &in); err != nil {
			v.releaseOpen(ctx, "create", in.Ino)
			return Opened{}, err
		}
	}
	if trunc && !created && in.IsRegular() {
		ino := in.Ino
		if v.opts.Gateway != nil && needs(&in) {
			// A partly cached fileset file is completed before it changes.
			err := v.complete(ctx, &in)
			if err == nil {
				in, err = v.api.GetAttr(ctx, ino)
			}
			if err != nil {
				v.releaseOpen(ctx, "create", ino)
				return Opened{}, err
			}
		}
		if in, err = v.c.Truncate(ctx, in, 0); err != nil {
			v.releaseOpen(ctx, "create", ino)
			return Opened{}, err
		}
	}
	return v.openCreated(ctx, c, in, mark, flags, created)
}

// mayCreateOpen checks an open with O_CREAT for a caller not Checked:
// search permission on the parent, then write permission on it to make
// the file, or the open's permissions on the file that exists.
func (v *FS) mayCreateOpen(ctx context.Context, c Cred, req meta.CreateReq, flags uint32) error {
	if err := checkName("create", req.Name); err != nil {
		return err
	}
	d, err := v.dir(ctx, c, "create", req.Parent, MayExec)
	if err != nil {
		return err
	}
	old, err := v.api.Lookup(ctx, req.Parent, req.Name)
	switch {
	case err == nil:
		if flags&syscall.O_EXCL != 0 {
			return fmt.Errorf("create %q: %w", req.Name, meta.ErrExist)
		}
		if old.IsDir() {
			return errorf("open", old.Ino, syscall.EISDIR)
		}
		return check(c, "open", &old.Attr, accessMask(flags))
	case errors.Is(err, meta.ErrNotFound):
		return check(c, "create", &d.Attr, MayWrite|MayExec)
	default:
		return err
	}
}

// openCreated opens in, which a create with Open returned (the meta
// service holds it open for us already); mark is the client's
// CallbackMark taken before the create.
func (v *FS) openCreated(ctx context.Context, c Cred, in meta.Inode, mark uint64, flags uint32, created bool) (Opened, error) {
	v.c.Overlay(&in)
	open := v.c.OpenCreated
	if created {
		open = v.c.OpenNew // a new inode: no recipe to ask for
	}
	h, mode, err := open(ctx, in, mark, int(flags))
	if err != nil {
		return Opened{Inode: in}, err
	}
	f := &File{v: v, ino: in.Ino, h: h, cred: c, flags: flags}
	return Opened{Fh: v.add(f), File: f, Inode: in, Mode: mode, Created: created}, nil
}

// releaseOpen drops an open a create recorded, after the create failed.
func (v *FS) releaseOpen(ctx context.Context, op string, ino meta.Ino) {
	if err := v.api.ReleaseOpen(ctx, ino); err != nil {
		v.log.Warn(op+": releasing the open failed", "inode", ino, "err", err)
	}
}

// Tmpfile makes and opens an unnamed file in directory parent (open(2)
// with O_TMPFILE; write and search permission on parent). The inode
// starts as an orphan (Nlink 0): it is reaped when its last handle here
// is released, unless Link gave it a name first.
func (v *FS) Tmpfile(ctx context.Context, c Cred, parent meta.Ino, mode, flags uint32) (Opened, error) {
	return v.TmpfileBlockSize(ctx, c, parent, mode, flags, 0)
}

// TmpfileBlockSize is Tmpfile making a file of blocks of bs bytes
// (meta.BlockSizeXattr's bounds) instead of its parent's block size; 0
// keeps the parent's. The S3 endpoint writes a multipart part in blocks
// that divide it, so that the parts' blocks make the object's.
func (v *FS) TmpfileBlockSize(ctx context.Context, c Cred, parent meta.Ino, mode, flags, bs uint32) (Opened, error) {
	if !c.Checked {
		if _, err := v.dir(ctx, c, "tmpfile", parent, MayWrite|MayExec); err != nil {
			return Opened{}, err
		}
	}
	mark := v.c.CallbackMark()
	in, err := v.api.Create(ctx, meta.CreateReq{
		Parent:  parent,
		Mode:    mode&^syscall.S_IFMT | syscall.S_IFREG,
		Uid:     c.Uid,
		Gid:     c.Gid,
		Tmpfile: true,
		Open:    true, // held like a create's open: the last release reaps it
	})
	if err != nil {
		return Opened{}, err
	}
	if bs != 0 && bs != in.BlockSize {
		// Before the open: the client's handle takes the block size
		// from in. Nobody else can have the unnamed file.
		err = v.api.SetXattr(ctx, in.Ino, meta.BlockSizeXattr, []byte(strconv.FormatUint(uint64(bs), 10)), 0)
		in.BlockSize = bs
	}
	o := Opened{Inode: in}
	if err != nil {
		v.releaseOpen(ctx, "tmpfile", in.Ino)
	} else {
		o, err = v.openCreated(ctx, c, in, mark, flags, true)
	}
	// Reaped now if the open failed, else at the last release.
	if rerr := v.c.Unlinked(ctx, in.Ino); rerr != nil {
		v.log.Warn("tmpfile: reap failed", "inode", in.Ino, "err", rerr)
	}
	return o, err
}

// Read reads into buf from off. In a fileset file not cached whole, the
// blocks the read needs are fetched first (EIO if home cannot give them).
func (f *File) Read(ctx context.Context, off int64, buf []byte) (int, error) {
	fetched := false
	if f.partial != nil {
		var err error
		if fetched, err = f.partial.ready(ctx, f.v, off, int64(len(buf))); err != nil {
			return 0, err
		}
	}
	n, err := f.h.Read(ctx, off, buf)
	if err != nil {
		return n, err
	}
	f.v.countRead(f.fileset, n, fetched)
	return n, nil
}

// Write writes data at off. A caller not Checked other than root clears
// the set-id bits a write clears, before its handle's first write.
func (f *File) Write(ctx context.Context, off int64, data []byte) (int, error) {
	if !f.cred.Checked && f.cred.Uid != 0 && !f.killed.Load() {
		if _, err := f.v.KillSuidgid(ctx, f.ino); err != nil {
			return 0, err
		}
		f.killed.Store(true)
	}
	return f.h.Write(ctx, off, data)
}

// Flush commits what the handle wrote as the file's policy says a close
// does.
func (f *File) Flush(ctx context.Context) error { return f.h.Flush(ctx) }

// Committed returns the file's inode as the latest commit through this
// client left it (Flush's, for one), and false before any: a writer that
// just flushed need not ask the meta service for the attributes.
func (f *File) Committed() (meta.Inode, bool) { return f.h.Committed() }

// ExpectSize says the file will be size bytes once written
// (client.Handle.ExpectSize): a hint for its buffers.
func (f *File) ExpectSize(size int64) { f.h.ExpectSize(size) }

// Fsync makes what the handle wrote durable.
func (f *File) Fsync(ctx context.Context) error {
	defer f.v.changed(f.ino)
	return f.h.Fsync(ctx)
}

// Release closes open file fh: what it wrote is committed and the open
// recorded with the meta service is dropped. An error means data written
// since the last fsync may be lost.
func (v *FS) Release(ctx context.Context, fh uint64) error {
	t := &v.handles
	t.mu.Lock()
	f := t.files[fh]
	delete(t.files, fh)
	t.mu.Unlock()
	if f == nil {
		return nil
	}
	defer v.changed(f.ino)
	return f.h.Release(ctx)
}
