package s3

import (
	"context"
	"errors"
	"syscall"

	"tessera/internal/meta"
	"tessera/internal/vfs"
)

// Prefix directories looked up lately. A key's directories (a/b of
// a/b/c) are looked up by every request naming it: two of a HEAD's four
// meta calls for a key two levels deep. A directory found is kept as a
// bucket is (bucketcache.go: bucketTTL, for the same identity, on the
// backend's clock), as a FUSE mount's kernel keeps a name for its entry
// timeout. What this endpoint removes (rmdir) is dropped at once. A
// request that finds nothing past a kept directory (ENOENT or ENOTDIR: it
// was removed or replaced by another client) looks the path up again
// afresh before it answers NoSuchKey, and a PUT whose kept parent went
// makes the path again: only a directory renamed by another client is
// seen at its old name, for at most bucketTTL. A missing directory is not
// kept.

// lookupDir is b.v.Lookup of directory parent/name for c, through the
// cache unless fresh; cached reports that it came from the cache.
func (b *Backend) lookupDir(ctx context.Context, c caller, parent meta.Ino, name string, fresh bool) (in meta.Inode, cached bool, err error) {
	key := bucketKey{base: parent, name: name, uid: c.cred.Uid, gid: c.cred.Gid}
	if !fresh {
		if in, ok := b.dirs.get(key, b.clk.Now()); ok {
			return in, true, nil
		}
	}
	in, err = b.v.Lookup(ctx, c.cred, parent, name)
	if err == nil {
		b.keepDir(c, parent, name, in)
	}
	return in, false, err
}

// keepDir keeps in, found or made as parent/name for c, if a directory.
func (b *Backend) keepDir(c caller, parent meta.Ino, name string, in meta.Inode) {
	if in.IsDir() {
		b.dirs.put(bucketKey{base: parent, name: name, uid: c.cred.Uid, gid: c.cred.Gid}, in, b.clk.Now())
	}
}

// rmdir removes directory parent/name and drops it from the caches.
func (b *Backend) rmdir(ctx context.Context, cred vfs.Cred, parent meta.Ino, name string) error {
	err := b.v.Rmdir(ctx, cred, parent, name)
	b.dirs.forget(parent, name)
	return err
}

// stale reports whether err may come from a kept directory that went.
func stale(err error) bool {
	return errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ENOTDIR) || errors.Is(err, syscall.ESTALE)
}
