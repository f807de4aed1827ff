package metrics

// The meta.API methods of the decorator (metaapi.go): each calls the
// wrapped API and records the call under its op name.

import (
	"context"
	"time"

	"tessera/internal/block"
	"tessera/internal/meta"
)

// Lookup implements meta.API.
func (a *metaAPI) Lookup(ctx context.Context, parent meta.Ino, name string) (out meta.Inode, err error) {
	defer a.m.done("lookup", time.Now(), &err)
	return a.api.Lookup(ctx, parent, name)
}

// GetAttr implements meta.API.
func (a *metaAPI) GetAttr(ctx context.Context, ino meta.Ino) (out meta.Inode, err error) {
	defer a.m.done("getattr", time.Now(), &err)
	return a.api.GetAttr(ctx, ino)
}

// SetAttr implements meta.API.
func (a *metaAPI) SetAttr(ctx context.Context, ino meta.Ino, req meta.SetAttrReq) (out meta.Inode, err error) {
	defer a.m.done("setattr", time.Now(), &err)
	return a.api.SetAttr(ctx, ino, req)
}

// Create implements meta.API.
func (a *metaAPI) Create(ctx context.Context, req meta.CreateReq) (out meta.Inode, err error) {
	defer a.m.done("create", time.Now(), &err)
	return a.api.Create(ctx, req)
}

// Link implements meta.API.
func (a *metaAPI) Link(ctx context.Context, ino, newParent meta.Ino, newName string) (out meta.Inode, err error) {
	defer a.m.done("link", time.Now(), &err)
	return a.api.Link(ctx, ino, newParent, newName)
}

// Unlink implements meta.API.
func (a *metaAPI) Unlink(ctx context.Context, parent meta.Ino, name string, reap meta.Ino) (out meta.Inode, err error) {
	defer a.m.done("unlink", time.Now(), &err)
	return a.api.Unlink(ctx, parent, name, reap)
}

// Rmdir implements meta.API.
func (a *metaAPI) Rmdir(ctx context.Context, parent meta.Ino, name string) (err error) {
	defer a.m.done("rmdir", time.Now(), &err)
	return a.api.Rmdir(ctx, parent, name)
}

// Rename implements meta.API.
func (a *metaAPI) Rename(ctx context.Context, oldParent meta.Ino, oldName string, newParent meta.Ino, newName string, flags uint32) (replaced meta.Inode, err error) {
	defer a.m.done("rename", time.Now(), &err)
	return a.api.Rename(ctx, oldParent, oldName, newParent, newName, flags)
}

// ReadDir implements meta.API.
func (a *metaAPI) ReadDir(ctx context.Context, dir meta.Ino, after string, limit int, plus bool) (ents []meta.DirEntry, more bool, err error) {
	defer a.m.done("readdir", time.Now(), &err)
	return a.api.ReadDir(ctx, dir, after, limit, plus)
}

// GetRecipe implements meta.API.
func (a *metaAPI) GetRecipe(ctx context.Context, ino meta.Ino, first, count uint64) (out meta.Recipe, err error) {
	defer a.m.done("getrecipe", time.Now(), &err)
	return a.api.GetRecipe(ctx, ino, first, count)
}

// Commit implements meta.API.
func (a *metaAPI) Commit(ctx context.Context, req meta.CommitReq) (out meta.Inode, err error) {
	defer a.m.done("commit", time.Now(), &err)
	return a.api.Commit(ctx, req)
}

// Reap implements meta.API.
func (a *metaAPI) Reap(ctx context.Context, ino meta.Ino) (err error) {
	defer a.m.done("reap", time.Now(), &err)
	return a.api.Reap(ctx, ino)
}

// HoldOpen implements meta.API.
func (a *metaAPI) HoldOpen(ctx context.Context, ino meta.Ino) (out meta.Inode, err error) {
	defer a.m.done("holdopen", time.Now(), &err)
	return a.api.HoldOpen(ctx, ino)
}

// ReleaseOpen implements meta.API.
func (a *metaAPI) ReleaseOpen(ctx context.Context, ino meta.Ino) (err error) {
	defer a.m.done("releaseopen", time.Now(), &err)
	return a.api.ReleaseOpen(ctx, ino)
}

// GetXattr implements meta.API.
func (a *metaAPI) GetXattr(ctx context.Context, ino meta.Ino, name string) (out []byte, err error) {
	defer a.m.done("getxattr", time.Now(), &err)
	return a.api.GetXattr(ctx, ino, name)
}

// SetXattr implements meta.API.
func (a *metaAPI) SetXattr(ctx context.Context, ino meta.Ino, name string, value []byte, flags uint32) (err error) {
	defer a.m.done("setxattr", time.Now(), &err)
	return a.api.SetXattr(ctx, ino, name, value, flags)
}

// ListXattr implements meta.API.
func (a *metaAPI) ListXattr(ctx context.Context, ino meta.Ino) (out []string, err error) {
	defer a.m.done("listxattr", time.Now(), &err)
	return a.api.ListXattr(ctx, ino)
}

// RemoveXattr implements meta.API.
func (a *metaAPI) RemoveXattr(ctx context.Context, ino meta.Ino, name string) (err error) {
	defer a.m.done("removexattr", time.Now(), &err)
	return a.api.RemoveXattr(ctx, ino, name)
}

// Sync implements meta.API.
func (a *metaAPI) Sync(ctx context.Context) (err error) {
	defer a.m.done("sync", time.Now(), &err)
	return a.api.Sync(ctx)
}

// StatFS implements meta.API.
func (a *metaAPI) StatFS(ctx context.Context) (out meta.StatFS, err error) {
	defer a.m.done("statfs", time.Now(), &err)
	return a.api.StatFS(ctx)
}

// Servers implements meta.API.
func (a *metaAPI) Servers(ctx context.Context) (out meta.ServerMap, err error) {
	defer a.m.done("servers", time.Now(), &err)
	return a.api.Servers(ctx)
}

// RegisterServer implements meta.API.
func (a *metaAPI) RegisterServer(ctx context.Context, s meta.Server) (out meta.ServerMap, err error) {
	defer a.m.done("register_server", time.Now(), &err)
	return a.api.RegisterServer(ctx, s)
}

// SetServerState implements meta.API.
func (a *metaAPI) SetServerState(ctx context.Context, id, state string) (out meta.ServerMap, err error) {
	defer a.m.done("set_server_state", time.Now(), &err)
	return a.api.SetServerState(ctx, id, state)
}

// SetReplicas implements meta.API.
func (a *metaAPI) SetReplicas(ctx context.Context, r int) (out meta.ServerMap, err error) {
	defer a.m.done("set_replicas", time.Now(), &err)
	return a.api.SetReplicas(ctx, r)
}

// MoverProgress implements meta.API.
func (a *metaAPI) MoverProgress(ctx context.Context) (out meta.MoverProgress, err error) {
	defer a.m.done("mover_progress", time.Now(), &err)
	return a.api.MoverProgress(ctx)
}

// Decompose implements meta.API.
func (a *metaAPI) Decompose(ctx context.Context, h block.Hash) (err error) {
	defer a.m.done("decompose", time.Now(), &err)
	return a.api.Decompose(ctx, h)
}

// WalkBlocks implements meta.API.
func (a *metaAPI) WalkBlocks(ctx context.Context, fn func(ino meta.Ino, index uint64, h block.Hash) error) (err error) {
	defer a.m.done("walk_blocks", time.Now(), &err)
	return a.api.WalkBlocks(ctx, fn)
}

// OpenSession implements meta.API.
func (a *metaAPI) OpenSession(ctx context.Context) (out meta.SessionInfo, err error) {
	defer a.m.done("open_session", time.Now(), &err)
	return a.api.OpenSession(ctx)
}

// Callbacks implements meta.API.
func (a *metaAPI) Callbacks(ctx context.Context, id meta.SessionID, ack uint64, wait time.Duration) (out []meta.Callback, err error) {
	defer a.m.done("callbacks", time.Now(), &err)
	return a.api.Callbacks(ctx, id, ack, wait)
}

// CloseSession implements meta.API.
func (a *metaAPI) CloseSession(ctx context.Context, id meta.SessionID) (err error) {
	defer a.m.done("close_session", time.Now(), &err)
	return a.api.CloseSession(ctx, id)
}
