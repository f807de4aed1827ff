package fuse

import (
	"context"
	"sync"

	"tessera/internal/meta"
)

// Gateway is what a mount asks when it meets a fileset inode that is not
// cached yet (package gateway; docs/design/2026-11-24-gateway.md): list a
// directory at home into placeholders, fetch a file's bytes.
type Gateway interface {
	ListDir(ctx context.Context, dir meta.Ino) (meta.Inode, error)
	Fetch(ctx context.Context, ino meta.Ino, off, n int64) (meta.Inode, error)
	// Revalidate compares ino with home once its fileset's validity lag
	// has passed, invalidating it if home changed (force: at once).
	Revalidate(ctx context.Context, ino meta.Ino, force bool) (bool, error)
}

// ready remembers the inodes found in no fileset, so that each costs one
// GetAttr per mount (an inode never joins a fileset: a fileset's root
// must be empty when it is made, and what is created under it is in it).
// A fileset inode is looked at every time, since revalidation can take
// it back from cached to placeholder.
type ready struct{ m sync.Map }

// needs reports whether in must go to the gateway before it is served.
func needs(in *meta.Inode) bool {
	return in.Gateway != nil && in.Gateway.State != meta.CacheCached
}

// fill makes sure inode ino is cached when it belongs to a fileset: a
// directory is listed at home, a regular file fetched whole. Without a
// Gateway it does nothing.
func (fs *FS) fill(ctx context.Context, ino meta.Ino) error {
	if fs.opts.Gateway == nil {
		return nil
	}
	if _, ok := fs.ready.m.Load(ino); ok {
		return nil
	}
	in, err := fs.api.GetAttr(ctx, ino)
	if err != nil {
		return err
	}
	if in.Gateway == nil {
		fs.ready.m.Store(ino, struct{}{})
		return nil
	}
	if !needs(&in) {
		// Cached: compare with home once the validity lag has passed.
		// Home unreachable is not an error here: what is cached is
		// served while home is down (Panache's disconnected mode).
		changed, err := fs.opts.Gateway.Revalidate(ctx, ino, false)
		if err != nil {
			fs.log.Debug("revalidation failed; serving what is cached", "ino", ino, "err", err)
			return nil
		}
		if !changed {
			return nil
		}
		if in, err = fs.api.GetAttr(ctx, ino); err != nil {
			return err
		}
	}
	if needs(&in) {
		switch {
		case in.IsDir():
			in, err = fs.opts.Gateway.ListDir(ctx, ino)
		case in.IsRegular():
			in, err = fs.opts.Gateway.Fetch(ctx, ino, 0, int64(in.Gateway.HomeSize))
		}
		if err != nil {
			return err
		}
	}
	return nil
}
