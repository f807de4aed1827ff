package vfs

import (
	"context"
	"sync"
	"syscall"
	"time"

	"tessera/internal/client"
	"tessera/internal/clock"
	"tessera/internal/meta"
	"tessera/internal/policy"
)

// Stateless I/O: protocols without open and close (NFSv3) read and write
// by inode. The FS keeps one client handle per inode (opened read-write),
// shared by every caller, and releases it once no call has used it for
// Options.IdleRelease: the release commits what is left and drops the
// open recorded with the meta service, as a close does.

// releaseTimeout bounds the release of an idle handle, which has no
// caller to take a context from (the meta service forgets the open when
// the session ends anyway).
const releaseTimeout = 30 * time.Second

type openTable struct {
	mu sync.Mutex
	m  map[meta.Ino]*openFile
}

func (t *openTable) init() { t.m = make(map[meta.Ino]*openFile) }

// openFile is a shared handle of the stateless I/O.
type openFile struct {
	ino   meta.Ino
	h     *client.Handle
	users int         // calls using h now
	idle  clock.Timer // armed while users is 0
	// fileset is the root of the file's fileset (0 if none), whose rules
	// its reads and writes follow (filesetio.go).
	fileset meta.Ino
	// partial: the file is not cached whole (filesetio.go); nil once it
	// is, or in no fileset. Guarded by mu.
	mu      sync.Mutex
	partial *partial
	// writable: a write passed the fileset rules; the later ones through
	// this handle need not ask again (a handle of OpenFile is checked
	// once, at its open, too).
	writable bool
	// ro puts unstable writes back in offset order (reorder.go); nil
	// where the file's policy commits every write.
	wmu sync.Mutex
	ro  *reorder
}

// acquire returns the shared handle of ino, opening it if there is none.
func (v *FS) acquire(ctx context.Context, ino meta.Ino) (*openFile, error) {
	t := &v.open
	t.mu.Lock()
	if of := t.m[ino]; of != nil {
		of.users++
		if of.idle != nil {
			of.idle.Stop()
		}
		t.mu.Unlock()
		return of, nil
	}
	t.mu.Unlock()
	gin, err := v.Fill(ctx, ino)
	if err != nil {
		return nil, err
	}
	h, _, in, err := v.c.OpenIno(ctx, ino, syscall.O_RDWR)
	if err != nil {
		return nil, err
	}
	if !in.IsRegular() {
		v.releaseHandle(h, ino)
		if in.IsDir() {
			return nil, errorf("read or write", ino, syscall.EISDIR)
		}
		return nil, errorf("read or write", ino, syscall.EINVAL)
	}
	t.mu.Lock()
	if of := t.m[ino]; of != nil {
		// Another call opened it meanwhile: use that one.
		of.users++
		if of.idle != nil {
			of.idle.Stop()
		}
		t.mu.Unlock()
		v.releaseHandle(h, ino)
		return of, nil
	}
	of := &openFile{ino: ino, h: h, users: 1}
	if v.c.PolicyFor(in.Policy).Knobs().Commit == policy.CommitOnSync {
		bs := int64(in.BlockSize)
		if bs <= 0 {
			bs = meta.DefaultBlockSize
		}
		of.ro = &reorder{bs: bs}
	}
	v.filesetOpen(of, &in, gin)
	t.m[ino] = of
	t.mu.Unlock()
	return of, nil
}

// done ends a call's use of of; the last one arms the idle release.
func (v *FS) done(of *openFile) {
	t := &v.open
	t.mu.Lock()
	defer t.mu.Unlock()
	of.users--
	if of.users > 0 {
		return
	}
	if of.idle != nil {
		of.idle.Reset(v.opts.IdleRelease)
		return
	}
	of.idle = v.opts.Clock.AfterFunc(v.opts.IdleRelease, func() { v.idle(of) })
}

// idle releases of if no call used it since its timer was armed.
func (v *FS) idle(of *openFile) {
	t := &v.open
	t.mu.Lock()
	if of.users > 0 || t.m[of.ino] != of {
		t.mu.Unlock()
		return
	}
	delete(t.m, of.ino)
	t.mu.Unlock()
	v.release(of)
}

// release passes on the writes of held and releases its handle.
func (v *FS) release(of *openFile) {
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	if err := v.settle(ctx, of); err != nil {
		v.log.Error("release of an idle handle: writes held for their order were not passed on", "inode", of.ino, "err", err)
	}
	v.releaseHandle(of.h, of.ino)
}

func (v *FS) releaseHandle(h *client.Handle, ino meta.Ino) {
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	defer v.changed(ino) // committed: Overlay no longer shows the writes
	if err := h.Release(ctx); err != nil {
		v.log.Error("release of an idle handle: data written since the last commit may be lost", "inode", ino, "err", err)
	}
}

// Open reports how many shared handles are open (for tests and status).
func (v *FS) Open() int {
	v.open.mu.Lock()
	defer v.open.mu.Unlock()
	return len(v.open.m)
}

// Close releases every shared handle, committing what they hold.
func (v *FS) Close() {
	t := &v.open
	t.mu.Lock()
	all := t.m
	t.m = make(map[meta.Ino]*openFile)
	t.mu.Unlock()
	for _, of := range all {
		if of.idle != nil {
			of.idle.Stop()
		}
		v.release(of)
	}
}

// ReadAt reads into buf from off of file ino (read permission needed) and
// returns the byte count and whether the read reached the end of the file.
func (v *FS) ReadAt(ctx context.Context, c Cred, ino meta.Ino, off int64, buf []byte) (int, bool, error) {
	if !c.Checked {
		in, err := v.GetAttr(ctx, ino)
		if err != nil {
			return 0, false, err
		}
		return v.ReadAtInode(ctx, c, &in, off, buf)
	}
	return v.readAt(ctx, ino, off, buf)
}

// ReadAtInode is ReadAt for a caller that has just fetched the file's
// attributes (GetAttr) for this call: in answers the permission check, so
// the meta service is not asked again.
func (v *FS) ReadAtInode(ctx context.Context, c Cred, in *meta.Inode, off int64, buf []byte) (int, bool, error) {
	if !c.Checked {
		if err := check(c, "read", &in.Attr, MayRead); err != nil {
			return 0, false, err
		}
	}
	return v.readAt(ctx, in.Ino, off, buf)
}

func (v *FS) readAt(ctx context.Context, ino meta.Ino, off int64, buf []byte) (int, bool, error) {
	of, err := v.acquire(ctx, ino)
	if err != nil {
		return 0, false, err
	}
	defer v.done(of)
	if err := v.settle(ctx, of); err != nil {
		return 0, false, err
	}
	fetched, err := v.filesetRead(ctx, of, off, len(buf))
	if err != nil {
		return 0, false, err
	}
	n, err := of.h.Read(ctx, off, buf)
	v.countRead(of.fileset, n, fetched)
	if err != nil {
		return n, false, err
	}
	return n, off+int64(n) >= of.h.Size(), nil
}

// WriteAt writes data at off of file ino (write permission needed), after
// clearing the set-id bits a write by c clears; with stable it commits
// before it returns (NFS's FILE_SYNC and DATA_SYNC: the write survives a
// crash of this server once answered). It returns the byte count.
func (v *FS) WriteAt(ctx context.Context, c Cred, ino meta.Ino, off int64, data []byte, stable bool) (int, error) {
	if !c.Checked {
		in, err := v.GetAttr(ctx, ino)
		if err != nil {
			return 0, err
		}
		return v.WriteAtInode(ctx, c, &in, off, data, stable)
	}
	return v.writeAt(ctx, ino, off, data, stable)
}

// WriteAtInode is WriteAt for a caller that has just fetched the file's
// attributes (GetAttr) for this call: in answers the permission check and
// says whether set-id bits are to be cleared, so the meta service is not
// asked again.
func (v *FS) WriteAtInode(ctx context.Context, c Cred, in *meta.Inode, off int64, data []byte, stable bool) (int, error) {
	if !c.Checked {
		if err := check(c, "write", &in.Attr, MayWrite); err != nil {
			return 0, err
		}
		if killOnWrite(c, in.Mode) != 0 {
			if _, err := v.KillSuidgid(ctx, in.Ino); err != nil {
				return 0, err
			}
		}
	}
	return v.writeAt(ctx, in.Ino, off, data, stable)
}

func (v *FS) writeAt(ctx context.Context, ino meta.Ino, off int64, data []byte, stable bool) (int, error) {
	of, err := v.acquire(ctx, ino)
	if err != nil {
		return 0, err
	}
	defer v.done(of)
	if err := v.filesetWrite(ctx, of); err != nil {
		return 0, err
	}
	if !stable && of.ro != nil {
		return v.writeOrdered(ctx, of, off, data)
	}
	if err := v.settle(ctx, of); err != nil {
		return 0, err
	}
	n, err := of.h.Write(ctx, off, data)
	if err != nil {
		return n, err
	}
	if stable {
		if err := of.h.Fsync(ctx); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// Commit makes what was written to ino through the stateless I/O durable
// (NFS's COMMIT).
func (v *FS) Commit(ctx context.Context, ino meta.Ino) error {
	defer v.changed(ino)
	t := &v.open
	t.mu.Lock()
	of := t.m[ino]
	if of != nil {
		of.users++
	}
	t.mu.Unlock()
	if of == nil {
		return v.c.Sync(ctx)
	}
	defer v.done(of)
	if err := v.settle(ctx, of); err != nil {
		return err
	}
	return of.h.Fsync(ctx)
}
