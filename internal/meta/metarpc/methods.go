package metarpc

import (
	"time"

	"context"

	"tessera/internal/block"
	"tessera/internal/meta"
)

func (c *Client) inode(ctx context.Context, method string, a *Args) (meta.Inode, error) {
	r, err := c.call(ctx, method, a)
	if err != nil {
		return meta.Inode{}, err
	}
	return r.Inode, nil
}

func (c *Client) none(ctx context.Context, method string, a *Args) error {
	_, err := c.call(ctx, method, a)
	return err
}

// Lookup implements meta.API.
func (c *Client) Lookup(ctx context.Context, parent meta.Ino, name string) (meta.Inode, error) {
	return c.inode(ctx, "Lookup", &Args{Parent: parent, Name: name})
}

// GetAttr implements meta.API.
func (c *Client) GetAttr(ctx context.Context, ino meta.Ino) (meta.Inode, error) {
	return c.inode(ctx, "GetAttr", &Args{Ino: ino})
}

// SetAttr implements meta.API.
func (c *Client) SetAttr(ctx context.Context, ino meta.Ino, req meta.SetAttrReq) (meta.Inode, error) {
	return c.inode(ctx, "SetAttr", &Args{Ino: ino, SetAttr: req})
}

// Create implements meta.API.
func (c *Client) Create(ctx context.Context, req meta.CreateReq) (meta.Inode, error) {
	return c.inode(ctx, "Create", &Args{Create: req})
}

// Link implements meta.API.
func (c *Client) Link(ctx context.Context, ino, newParent meta.Ino, newName string) (meta.Inode, error) {
	return c.inode(ctx, "Link", &Args{Ino: ino, NewParent: newParent, NewName: newName})
}

// Unlink implements meta.API.
func (c *Client) Unlink(ctx context.Context, parent meta.Ino, name string, reap meta.Ino) (meta.Inode, error) {
	return c.inode(ctx, "Unlink", &Args{Parent: parent, Name: name, Ino: reap})
}

// Rmdir implements meta.API.
func (c *Client) Rmdir(ctx context.Context, parent meta.Ino, name string) error {
	return c.none(ctx, "Rmdir", &Args{Parent: parent, Name: name})
}

// Rename implements meta.API.
func (c *Client) Rename(ctx context.Context, oldParent meta.Ino, oldName string, newParent meta.Ino, newName string, flags uint32) (meta.Inode, error) {
	return c.inode(ctx, "Rename", &Args{Parent: oldParent, Name: oldName, NewParent: newParent, NewName: newName, Flags: flags})
}

// ReadDir implements meta.API.
func (c *Client) ReadDir(ctx context.Context, dir meta.Ino, after string, limit int, plus bool) ([]meta.DirEntry, bool, error) {
	r, err := c.call(ctx, "ReadDir", &Args{Ino: dir, After: after, Limit: limit, Plus: plus})
	if err != nil {
		return nil, false, err
	}
	return r.Ents, r.More, nil
}

// GetRecipe implements meta.API.
func (c *Client) GetRecipe(ctx context.Context, ino meta.Ino, first, count uint64) (meta.Recipe, error) {
	r, err := c.call(ctx, "GetRecipe", &Args{Ino: ino, First: first, Count: count})
	if err != nil {
		return meta.Recipe{}, err
	}
	return r.Recipe, nil
}

// Commit implements meta.API.
func (c *Client) Commit(ctx context.Context, req meta.CommitReq) (meta.Inode, error) {
	return c.inode(ctx, "Commit", &Args{Commit: req})
}

// HoldOpen implements meta.API.
func (c *Client) HoldOpen(ctx context.Context, ino meta.Ino) (meta.Inode, error) {
	return c.inode(ctx, "HoldOpen", &Args{Ino: ino})
}

// ReleaseOpen implements meta.API.
func (c *Client) ReleaseOpen(ctx context.Context, ino meta.Ino) error {
	return c.none(ctx, "ReleaseOpen", &Args{Ino: ino})
}

// Reap implements meta.API.
func (c *Client) Reap(ctx context.Context, ino meta.Ino) error {
	return c.none(ctx, "Reap", &Args{Ino: ino})
}

// GetXattr implements meta.API.
func (c *Client) GetXattr(ctx context.Context, ino meta.Ino, name string) ([]byte, error) {
	r, err := c.call(ctx, "GetXattr", &Args{Ino: ino, Name: name})
	if err != nil {
		return nil, err
	}
	if r.Value == nil {
		r.Value = []byte{} // gob drops empty slices; a present value is never nil
	}
	return r.Value, nil
}

// SetXattr implements meta.API.
func (c *Client) SetXattr(ctx context.Context, ino meta.Ino, name string, value []byte, flags uint32) error {
	return c.none(ctx, "SetXattr", &Args{Ino: ino, Name: name, Value: value, Flags: flags})
}

// ListXattr implements meta.API.
func (c *Client) ListXattr(ctx context.Context, ino meta.Ino) ([]string, error) {
	r, err := c.call(ctx, "ListXattr", &Args{Ino: ino})
	if err != nil {
		return nil, err
	}
	return r.Names, nil
}

// RemoveXattr implements meta.API.
func (c *Client) RemoveXattr(ctx context.Context, ino meta.Ino, name string) error {
	return c.none(ctx, "RemoveXattr", &Args{Ino: ino, Name: name})
}

// Sync implements meta.API.
func (c *Client) Sync(ctx context.Context) error {
	return c.none(ctx, "Sync", &Args{})
}

// StatFS implements meta.API.
func (c *Client) StatFS(ctx context.Context) (meta.StatFS, error) {
	r, err := c.call(ctx, "StatFS", &Args{})
	if err != nil {
		return meta.StatFS{}, err
	}
	return r.StatFS, nil
}

// Servers implements meta.API.
func (c *Client) Servers(ctx context.Context) (meta.ServerMap, error) {
	r, err := c.call(ctx, "Servers", &Args{})
	if err != nil {
		return meta.ServerMap{}, err
	}
	return r.Map, nil
}

// RegisterServer implements meta.API.
func (c *Client) RegisterServer(ctx context.Context, s meta.Server) (meta.ServerMap, error) {
	r, err := c.call(ctx, "RegisterServer", &Args{Server: s})
	if err != nil {
		return meta.ServerMap{}, err
	}
	return r.Map, nil
}

// ListBlocks implements meta.BlockLister: one page per call.
func (c *Client) ListBlocks(ctx context.Context, afterIno meta.Ino, afterIndex uint64, limit int) ([]meta.BlockRef, bool, error) {
	r, err := c.call(ctx, "ListBlocks", &Args{Ino: afterIno, First: afterIndex, Limit: limit})
	if err != nil {
		return nil, false, err
	}
	return r.Refs, r.More, nil
}

// WalkBlocks implements meta.API, one ListBlocks page per call, calling fn
// between calls.
func (c *Client) WalkBlocks(ctx context.Context, fn func(ino meta.Ino, index uint64, h block.Hash) error) error {
	return meta.WalkLister(ctx, c, fn)
}

// SetServerState implements meta.API.
func (c *Client) SetServerState(ctx context.Context, id, state string) (meta.ServerMap, error) {
	r, err := c.call(ctx, "SetServerState", &Args{Name: id, Value: []byte(state)})
	if err != nil {
		return meta.ServerMap{}, err
	}
	return r.Map, nil
}

// SetReplicas implements meta.API.
func (c *Client) SetReplicas(ctx context.Context, n int) (meta.ServerMap, error) {
	r, err := c.call(ctx, "SetReplicas", &Args{Count: uint64(n)})
	if err != nil {
		return meta.ServerMap{}, err
	}
	return r.Map, nil
}

// MoverProgress implements meta.API.
func (c *Client) MoverProgress(ctx context.Context) (meta.MoverProgress, error) {
	r, err := c.call(ctx, "MoverProgress", &Args{})
	if err != nil {
		return meta.MoverProgress{}, err
	}
	return r.Progress, nil
}

// Decompose implements meta.API.
func (c *Client) Decompose(ctx context.Context, h block.Hash) error {
	return c.none(ctx, "Decompose", &Args{Hash: h})
}

// OpenSession implements meta.API.
func (c *Client) OpenSession(ctx context.Context) (meta.SessionInfo, error) {
	r, err := c.call(ctx, "OpenSession", &Args{})
	if err != nil {
		return meta.SessionInfo{}, err
	}
	return r.Session, nil
}

// Callbacks implements meta.API over the client's poll connection. Without
// a deadline in ctx the call waits wait plus DefaultCallTimeout at most.
func (c *Client) Callbacks(ctx context.Context, id meta.SessionID, ack uint64, wait time.Duration) ([]meta.Callback, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, wait+DefaultCallTimeout)
		defer cancel()
	}
	a := &Args{Ack: ack, Wait: int64(wait)}
	r, err := c.withSession(id).call(ctx, "Callbacks", a)
	if err != nil {
		return nil, err
	}
	return r.Callbacks, nil
}

// CloseSession implements meta.API.
func (c *Client) CloseSession(ctx context.Context, id meta.SessionID) error {
	return c.withSession(id).none(ctx, "CloseSession", &Args{})
}

// withSession returns c sending session id.
func (c *Client) withSession(id meta.SessionID) *Client {
	return &Client{pool: c.pool, session: id}
}
