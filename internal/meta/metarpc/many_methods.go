package metarpc

import (
	"context"
	"time"

	"tessera/internal/block"
	"tessera/internal/meta"
)

// Many's meta.API: every method is one call through do, which fails over
// while the current process is unreachable.

func many1[T any](m *Many, ctx context.Context, f func(c *Client) (T, error)) (T, error) {
	var v T
	err := m.do(ctx, func(c *Client) (err error) { v, err = f(c); return err })
	return v, err
}

// Lookup implements meta.API.
func (m *Many) Lookup(ctx context.Context, parent meta.Ino, name string) (meta.Inode, error) {
	return many1(m, ctx, func(c *Client) (meta.Inode, error) { return c.Lookup(ctx, parent, name) })
}

// GetAttr implements meta.API.
func (m *Many) GetAttr(ctx context.Context, ino meta.Ino) (meta.Inode, error) {
	return many1(m, ctx, func(c *Client) (meta.Inode, error) { return c.GetAttr(ctx, ino) })
}

// SetAttr implements meta.API.
func (m *Many) SetAttr(ctx context.Context, ino meta.Ino, req meta.SetAttrReq) (meta.Inode, error) {
	return many1(m, ctx, func(c *Client) (meta.Inode, error) { return c.SetAttr(ctx, ino, req) })
}

// Create implements meta.API.
func (m *Many) Create(ctx context.Context, req meta.CreateReq) (meta.Inode, error) {
	return many1(m, ctx, func(c *Client) (meta.Inode, error) { return c.Create(ctx, req) })
}

// Link implements meta.API.
func (m *Many) Link(ctx context.Context, ino, newParent meta.Ino, newName string) (meta.Inode, error) {
	return many1(m, ctx, func(c *Client) (meta.Inode, error) { return c.Link(ctx, ino, newParent, newName) })
}

// Unlink implements meta.API.
func (m *Many) Unlink(ctx context.Context, parent meta.Ino, name string, reap meta.Ino) (meta.Inode, error) {
	return many1(m, ctx, func(c *Client) (meta.Inode, error) { return c.Unlink(ctx, parent, name, reap) })
}

// Rmdir implements meta.API.
func (m *Many) Rmdir(ctx context.Context, parent meta.Ino, name string) error {
	return m.do(ctx, func(c *Client) error { return c.Rmdir(ctx, parent, name) })
}

// Rename implements meta.API.
func (m *Many) Rename(ctx context.Context, oldParent meta.Ino, oldName string, newParent meta.Ino, newName string, flags uint32) (meta.Inode, error) {
	return many1(m, ctx, func(c *Client) (meta.Inode, error) {
		return c.Rename(ctx, oldParent, oldName, newParent, newName, flags)
	})
}

// ReadDir implements meta.API.
func (m *Many) ReadDir(ctx context.Context, dir meta.Ino, after string, limit int, plus bool) ([]meta.DirEntry, bool, error) {
	var more bool
	ents, err := many1(m, ctx, func(c *Client) (ents []meta.DirEntry, err error) {
		ents, more, err = c.ReadDir(ctx, dir, after, limit, plus)
		return ents, err
	})
	return ents, more, err
}

// GetRecipe implements meta.API.
func (m *Many) GetRecipe(ctx context.Context, ino meta.Ino, first, count uint64) (meta.Recipe, error) {
	return many1(m, ctx, func(c *Client) (meta.Recipe, error) { return c.GetRecipe(ctx, ino, first, count) })
}

// Commit implements meta.API.
func (m *Many) Commit(ctx context.Context, req meta.CommitReq) (meta.Inode, error) {
	return many1(m, ctx, func(c *Client) (meta.Inode, error) { return c.Commit(ctx, req) })
}

// Reap implements meta.API.
func (m *Many) Reap(ctx context.Context, ino meta.Ino) error {
	return m.do(ctx, func(c *Client) error { return c.Reap(ctx, ino) })
}

// HoldOpen implements meta.API.
func (m *Many) HoldOpen(ctx context.Context, ino meta.Ino) (meta.Inode, error) {
	return many1(m, ctx, func(c *Client) (meta.Inode, error) { return c.HoldOpen(ctx, ino) })
}

// ReleaseOpen implements meta.API.
func (m *Many) ReleaseOpen(ctx context.Context, ino meta.Ino) error {
	return m.do(ctx, func(c *Client) error { return c.ReleaseOpen(ctx, ino) })
}

// GetXattr implements meta.API.
func (m *Many) GetXattr(ctx context.Context, ino meta.Ino, name string) ([]byte, error) {
	return many1(m, ctx, func(c *Client) ([]byte, error) { return c.GetXattr(ctx, ino, name) })
}

// SetXattr implements meta.API.
func (m *Many) SetXattr(ctx context.Context, ino meta.Ino, name string, value []byte, flags uint32) error {
	return m.do(ctx, func(c *Client) error { return c.SetXattr(ctx, ino, name, value, flags) })
}

// ListXattr implements meta.API.
func (m *Many) ListXattr(ctx context.Context, ino meta.Ino) ([]string, error) {
	return many1(m, ctx, func(c *Client) ([]string, error) { return c.ListXattr(ctx, ino) })
}

// RemoveXattr implements meta.API.
func (m *Many) RemoveXattr(ctx context.Context, ino meta.Ino, name string) error {
	return m.do(ctx, func(c *Client) error { return c.RemoveXattr(ctx, ino, name) })
}

// Sync implements meta.API.
func (m *Many) Sync(ctx context.Context) error {
	return m.do(ctx, func(c *Client) error { return c.Sync(ctx) })
}

// StatFS implements meta.API.
func (m *Many) StatFS(ctx context.Context) (meta.StatFS, error) {
	return many1(m, ctx, func(c *Client) (meta.StatFS, error) { return c.StatFS(ctx) })
}

// Servers implements meta.API.
func (m *Many) Servers(ctx context.Context) (meta.ServerMap, error) {
	return many1(m, ctx, func(c *Client) (meta.ServerMap, error) { return c.Servers(ctx) })
}

// RegisterServer implements meta.API.
func (m *Many) RegisterServer(ctx context.Context, s meta.Server) (meta.ServerMap, error) {
	return many1(m, ctx, func(c *Client) (meta.ServerMap, error) { return c.RegisterServer(ctx, s) })
}

// SetServerState implements meta.API.
func (m *Many) SetServerState(ctx context.Context, id, state string) (meta.ServerMap, error) {
	return many1(m, ctx, func(c *Client) (meta.ServerMap, error) { return c.SetServerState(ctx, id, state) })
}

// SetReplicas implements meta.API.
func (m *Many) SetReplicas(ctx context.Context, r int) (meta.ServerMap, error) {
	return many1(m, ctx, func(c *Client) (meta.ServerMap, error) { return c.SetReplicas(ctx, r) })
}

// MoverProgress implements meta.API.
func (m *Many) MoverProgress(ctx context.Context) (meta.MoverProgress, error) {
	return many1(m, ctx, func(c *Client) (meta.MoverProgress, error) { return c.MoverProgress(ctx) })
}

// Decompose implements meta.API.
func (m *Many) Decompose(ctx context.Context, h block.Hash) error {
	return m.do(ctx, func(c *Client) error { return c.Decompose(ctx, h) })
}

// ListBlocks implements meta.BlockLister: one page, on whichever process
// is current.
func (m *Many) ListBlocks(ctx context.Context, afterIno meta.Ino, afterIndex uint64, limit int) ([]meta.BlockRef, bool, error) {
	var more bool
	refs, err := many1(m, ctx, func(c *Client) (refs []meta.BlockRef, err error) {
		refs, more, err = c.ListBlocks(ctx, afterIno, afterIndex, limit)
		return refs, err
	})
	return refs, more, err
}

// WalkBlocks implements meta.API page by page, so that a failover in the
// middle goes on from the page it reached.
func (m *Many) WalkBlocks(ctx context.Context, fn func(ino meta.Ino, index uint64, h block.Hash) error) error {
	return meta.WalkLister(ctx, m, fn)
}

// OpenSession implements meta.API.
func (m *Many) OpenSession(ctx context.Context) (meta.SessionInfo, error) {
	return many1(m, ctx, func(c *Client) (meta.SessionInfo, error) { return c.OpenSession(ctx) })
}

// Callbacks implements meta.API: the poll goes to the current process; one
// that never heard of the session answers meta.ErrSessionExpired.
func (m *Many) Callbacks(ctx context.Context, id meta.SessionID, ack uint64, wait time.Duration) ([]meta.Callback, error) {
	return many1(m, ctx, func(c *Client) ([]meta.Callback, error) { return c.Callbacks(ctx, id, ack, wait) })
}

// CloseSession implements meta.API.
func (m *Many) CloseSession(ctx context.Context, id meta.SessionID) error {
	return m.do(ctx, func(c *Client) error { return c.CloseSession(ctx, id) })
}
