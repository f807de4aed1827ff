package client

import (
	"context"

	"tessera/internal/meta"
)

// Unlink removes the non-directory entry parent/name. When this client has
// no handle open on the entry's inode and it was the last link, the meta
// service deletes the inode in the same transaction; otherwise the inode
// stays an orphan until the last handle here is released (Unlinked).
//
// The file's lock is held from the check for open handles to the end of the
// unlink, which OpenIno also takes before reading attributes: an open racing
// with the unlink either is seen here (no reap) or finds the inode gone.
func (c *Client) Unlink(ctx context.Context, parent meta.Ino, name string) (meta.Inode, error) {
	in, err := c.api.Lookup(ctx, parent, name)
	if err != nil {
		return meta.Inode{}, err
	}
	if in.IsDir() {
		return c.api.Unlink(ctx, parent, name, 0) // the meta service says EISDIR
	}
	return c.unlink(ctx, parent, name, in)
}

// UnlinkHinted is Unlink with ino, the inode parent/name named moments ago
// (a listing or a lookup), in place of the lookup Unlink makes to learn it
// (one meta call fewer per removal, issue 28). The hint only picks the
// inode offered for the same-transaction reap: a stale one is safe, the
// meta service reaps only the inode the name holds, and the inode the
// unlink did leave an orphan is handed to Unlinked, as in Unlink. The
// inode returned is the meta service's (or, when its reply was lost and
// the unlink found applied, the hint with no link counted).
func (c *Client) UnlinkHinted(ctx context.Context, parent meta.Ino, name string, ino meta.Ino) (meta.Inode, error) {
	return c.unlink(ctx, parent, name, meta.Inode{Attr: meta.Attr{Ino: ino, Nlink: 1}})
}

// unlink removes parent/name, believed to name in.
func (c *Client) unlink(ctx context.Context, parent meta.Ino, name string, in meta.Inode) (meta.Inode, error) {
	f := c.pin(in.Ino)
	f.mu.Lock()
	c.mu.Lock()
	reap := in.Ino
	if f.opens > 0 {
		reap = 0
	}
	c.mu.Unlock()
	out, err := c.api.Unlink(ctx, parent, name, reap)
	f.mu.Unlock()
	c.unpin(f)
	if err != nil {
		return out, err
	}
	if out.Ino == 0 {
		// The reply was lost and the unlink found applied (metawait):
		// what it left is what the lookup saw, less this link.
		out = in
		out.Nlink = max(in.Nlink, 1) - 1
	}
	if out.Nlink == 0 && (reap == 0 || out.Ino != reap) {
		// Open here, or the name moved to another inode in between.
		if err := c.Unlinked(ctx, out.Ino); err != nil {
			c.log.Warn("reap after unlink failed", "inode", out.Ino, "err", err)
		}
	}
	return out, nil
}

// pin returns the state of ino, creating it, without counting an opener.
func (c *Client) pin(ino meta.Ino) *file {
	c.mu.Lock()
	defer c.mu.Unlock()
	f := c.mu.files[ino]
	if f == nil {
		f = &file{c: c, ino: ino}
		c.mu.files[ino] = f
	}
	return f
}

// unpin drops f from the table unless something else holds it.
func (c *Client) unpin(f *file) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if f.opens == 0 && !f.loaded && !f.unlinked && c.mu.files[f.ino] == f {
		delete(c.mu.files, f.ino)
	}
}
