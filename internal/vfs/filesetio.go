package vfs

import (
	"context"

	"tessera/internal/meta"
)

// The fileset rules of the stateless I/O (io.go), as OpenFile and File
// keep them for handles (files.go): a read of a file not cached whole
// fetches the blocks it needs first; a write is refused in a read-only
// fileset (EROFS) and completes a partly cached file first (write-back
// sends files whole). The shared handle is opened read-write whatever the
// first call was, so these checks are made per call, not at the open.

// filesetOpen records what the stateless handle of of needs: in is the
// inode OpenIno read, gin the one Fill returned (nil outside filesets).
func (v *FS) filesetOpen(of *openFile, in, gin *meta.Inode) {
	if v.opts.Gateway == nil || !in.IsRegular() {
		return
	}
	g := in.Gateway
	if g == nil && gin != nil {
		g = gin.Gateway // attributes from a cache tier may not carry it
	}
	if g == nil {
		return
	}
	of.fileset = g.Fileset
	if g.State != meta.CacheCached {
		withG := *in
		withG.Gateway = g
		of.partial = newPartial(&withG)
	}
}

// filesetRead makes [off, off+n) of of readable; it reports whether the
// gateway had to fetch (a miss, for the fileset's read counts).
func (v *FS) filesetRead(ctx context.Context, of *openFile, off int64, n int) (bool, error) {
	of.mu.Lock()
	p := of.partial
	of.mu.Unlock()
	if p == nil {
		return false, nil
	}
	return p.ready(ctx, v, off, int64(n))
}

// filesetWrite refuses a write in a read-only fileset and completes a
// partly cached file before the first write lands in it.
func (v *FS) filesetWrite(ctx context.Context, of *openFile) error {
	if of.fileset == 0 {
		return nil
	}
	of.mu.Lock()
	ok := of.writable
	of.mu.Unlock()
	if ok {
		return nil
	}
	in, err := v.api.GetAttr(ctx, of.ino)
	if err != nil {
		return err
	}
	if err := v.refuseReadOnly(ctx, "write", &in); err != nil {
		return err
	}
	of.mu.Lock()
	defer of.mu.Unlock()
	if of.partial != nil {
		if err := v.complete(ctx, &in); err != nil {
			return err
		}
		// Whole now: the client reads the recipe again (its blocks were
		// committed by a gateway's client, whose callback need not reach
		// this one).
		v.c.Invalidate(of.ino)
		v.changed(of.ino)
		of.partial = nil
	}
	of.writable = true
	return nil
}
