package vfs

import (
	"context"
	"errors"

	"tessera/internal/meta"
)

// StatFSIn is StatFS as seen from inode ino: inside a directory quota's
// tree (the innermost over ino) the totals are the quota's limits and the
// free room what its usage leaves, never more than the cluster has; so df
// in a quota tree shows the quota. A failed quota lookup leaves the
// cluster's figures (statfs does not fail for it).
func (v *FS) StatFSIn(ctx context.Context, ino meta.Ino) (StatFS, error) {
	st, err := v.StatFS(ctx)
	if err != nil {
		return st, err
	}
	qa := v.c.Quotas()
	if qa == nil {
		return st, nil
	}
	q, err := qa.QuotaOf(ctx, ino)
	if err != nil {
		if !errors.Is(err, meta.ErrNotFound) && !errors.Is(err, meta.ErrNotSupported) {
			v.log.Debug("statfs: quota lookup", "inode", ino, "err", err)
		}
		return st, nil
	}
	return withQuota(st, q), nil
}

// withQuota narrows st to quota q's limits: the totals are the limits,
// free is what the usage leaves (so df's used column is the quota's
// usage), and available is that, never more than the cluster has.
func withQuota(st StatFS, q meta.Quota) StatFS {
	bsize := uint64(st.Bsize)
	if q.MaxBytes > 0 && bsize > 0 {
		blocks := (q.MaxBytes + bsize - 1) / bsize
		used := (q.Bytes + bsize - 1) / bsize
		st.Bfree = blocks - min(used, blocks)
		st.Bavail = min(st.Bavail, st.Bfree)
		st.Blocks = blocks
	}
	if q.MaxInodes > 0 {
		st.Ffree = min(st.Ffree, q.MaxInodes-min(q.Inodes, q.MaxInodes))
		st.Files = q.MaxInodes
	}
	return st
}
