package authz_test

import (
	"context"
	"time"

	"tessera/internal/auth"
	"tessera/internal/block"
	"tessera/internal/meta"
)

// withID makes every call of api with id in its context, as the meta
// role's transport does for an authenticated caller; it lets suites written
// against meta.API (metatest) run through the decorator.
type withID struct {
	api meta.API
	id  auth.Identity
}

func (w withID) ctx(ctx context.Context) context.Context { return auth.NewContext(ctx, w.id) }

// WithSession implements meta.SessionBinder.
func (w withID) WithSession(sid meta.SessionID) meta.API {
	return withID{api: w.api.(meta.SessionBinder).WithSession(sid), id: w.id}
}

func (w withID) Lookup(ctx context.Context, parent meta.Ino, name string) (meta.Inode, error) {
	return w.api.Lookup(w.ctx(ctx), parent, name)
}

func (w withID) GetAttr(ctx context.Context, ino meta.Ino) (meta.Inode, error) {
	return w.api.GetAttr(w.ctx(ctx), ino)
}

func (w withID) SetAttr(ctx context.Context, ino meta.Ino, req meta.SetAttrReq) (meta.Inode, error) {
	return w.api.SetAttr(w.ctx(ctx), ino, req)
}

func (w withID) Create(ctx context.Context, req meta.CreateReq) (meta.Inode, error) {
	return w.api.Create(w.ctx(ctx), req)
}

func (w withID) Link(ctx context.Context, ino, newParent meta.Ino, newName string) (meta.Inode, error) {
	return w.api.Link(w.ctx(ctx), ino, newParent, newName)
}

func (w withID) Unlink(ctx context.Context, parent meta.Ino, name string, reap meta.Ino) (meta.Inode, error) {
	return w.api.Unlink(w.ctx(ctx), parent, name, reap)
}

func (w withID) Rmdir(ctx context.Context, parent meta.Ino, name string) error {
	return w.api.Rmdir(w.ctx(ctx), parent, name)
}

func (w withID) Rename(ctx context.Context, oldParent meta.Ino, oldName string, newParent meta.Ino, newName string, flags uint32) (meta.Inode, error) {
	return w.api.Rename(w.ctx(ctx), oldParent, oldName, newParent, newName, flags)
}

func (w withID) ReadDir(ctx context.Context, dir meta.Ino, after string, limit int, plus bool) ([]meta.DirEntry, bool, error) {
	return w.api.ReadDir(w.ctx(ctx), dir, after, limit, plus)
}

func (w withID) GetRecipe(ctx context.Context, ino meta.Ino, first, count uint64) (meta.Recipe, error) {
	return w.api.GetRecipe(w.ctx(ctx), ino, first, count)
}

func (w withID) Commit(ctx context.Context, req meta.CommitReq) (meta.Inode, error) {
	return w.api.Commit(w.ctx(ctx), req)
}

func (w withID) Reap(ctx context.Context, ino meta.Ino) error {
	return w.api.Reap(w.ctx(ctx), ino)
}

func (w withID) HoldOpen(ctx context.Context, ino meta.Ino) (meta.Inode, error) {
	return w.api.HoldOpen(w.ctx(ctx), ino)
}

func (w withID) ReleaseOpen(ctx context.Context, ino meta.Ino) error {
	return w.api.ReleaseOpen(w.ctx(ctx), ino)
}

func (w withID) GetXattr(ctx context.Context, ino meta.Ino, name string) ([]byte, error) {
	return w.api.GetXattr(w.ctx(ctx), ino, name)
}

func (w withID) SetXattr(ctx context.Context, ino meta.Ino, name string, value []byte, flags uint32) error {
	return w.api.SetXattr(w.ctx(ctx), ino, name, value, flags)
}

func (w withID) ListXattr(ctx context.Context, ino meta.Ino) ([]string, error) {
	return w.api.ListXattr(w.ctx(ctx), ino)
}

func (w withID) RemoveXattr(ctx context.Context, ino meta.Ino, name string) error {
	return w.api.RemoveXattr(w.ctx(ctx), ino, name)
}

func (w withID) Sync(ctx context.Context) error {
	return w.api.Sync(w.ctx(ctx))
}

func (w withID) StatFS(ctx context.Context) (meta.StatFS, error) {
	return w.api.StatFS(w.ctx(ctx))
}

func (w withID) Servers(ctx context.Context) (meta.ServerMap, error) {
	return w.api.Servers(w.ctx(ctx))
}

func (w withID) RegisterServer(ctx context.Context, s meta.Server) (meta.ServerMap, error) {
	return w.api.RegisterServer(w.ctx(ctx), s)
}

func (w withID) SetServerState(ctx context.Context, id, state string) (meta.ServerMap, error) {
	return w.api.SetServerState(w.ctx(ctx), id, state)
}

func (w withID) SetReplicas(ctx context.Context, r int) (meta.ServerMap, error) {
	return w.api.SetReplicas(w.ctx(ctx), r)
}

func (w withID) MoverProgress(ctx context.Context) (meta.MoverProgress, error) {
	return w.api.MoverProgress(w.ctx(ctx))
}

func (w withID) Decompose(ctx context.Context, h block.Hash) error {
	return w.api.Decompose(w.ctx(ctx), h)
}

func (w withID) WalkBlocks(ctx context.Context, fn func(ino meta.Ino, index uint64, h block.Hash) error) error {
	return w.api.WalkBlocks(w.ctx(ctx), fn)
}

func (w withID) OpenSession(ctx context.Context) (meta.SessionInfo, error) {
	return w.api.OpenSession(w.ctx(ctx))
}

func (w withID) Callbacks(ctx context.Context, id meta.SessionID, ack uint64, wait time.Duration) ([]meta.Callback, error) {
	return w.api.Callbacks(w.ctx(ctx), id, ack, wait)
}

func (w withID) CloseSession(ctx context.Context, id meta.SessionID) error {
	return w.api.CloseSession(w.ctx(ctx), id)
}

var (
	_ meta.API           = withID{}
	_ meta.SessionBinder = withID{}
)
