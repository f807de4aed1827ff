package authz

import (
	"context"
	"errors"
	"fmt"

	"tessera/internal/auth"
	"tessera/internal/block"
	"tessera/internal/meta"
)

// view is the decorator's meta.API, unbound (sid 0) or bound to a session.
// Its methods are written by hand, not generated (internal/meta/wrapgen):
// each checks its own inode arguments against a confined caller's root,
// maps its own replies, and logs the administrative ones; a generated
// pass-through would let a new method past confinement. view embeds no
// meta.API, so a new method does not compile until it is written here, and
// the rule tables (table.go) refuse a method they do not name.
type view struct {
	a   *Authorizer
	api meta.API // the Service, bound to sid when sid != 0
	sid meta.SessionID
}

// begin authorizes a call of method and returns the API to make it on: a
// call bound to a session another identity opened is refused; one bound to
// a session the service has forgotten is made unbound (an expired session
// holds nothing either way).
func (v *view) begin(ctx context.Context, method string) (caller, meta.API, error) {
	c, err := v.a.authorize(ctx, method)
	if err != nil || v.sid == 0 {
		return c, v.api, err
	}
	switch known, owned := v.a.sessions.check(v.sid, c.id, v.a.now()); {
	case !known:
		return c, v.a.svc, nil
	case !owned:
		return caller{}, nil, v.a.deny(c.id, method, fmt.Errorf("%w: session %d is not %s's", auth.ErrDenied, v.sid, c.id))
	}
	return c, v.api, nil
}

// inode authorizes method and maps its one inode argument.
func (v *view) inode(ctx context.Context, method string, ino meta.Ino) (caller, meta.API, meta.Ino, error) {
	c, api, err := v.begin(ctx, method)
	if err != nil {
		return c, nil, 0, err
	}
	ino, err = v.a.in(ctx, c, method, ino)
	return c, api, ino, err
}

// Lookup implements meta.API.
func (v *view) Lookup(ctx context.Context, parent meta.Ino, name string) (meta.Inode, error) {
	c, api, parent, err := v.inode(ctx, "Lookup", parent)
	if err != nil {
		return meta.Inode{}, err
	}
	in, err := api.Lookup(ctx, parent, name)
	c.outInode(&in)
	return in, err
}

// GetAttr implements meta.API.
func (v *view) GetAttr(ctx context.Context, ino meta.Ino) (meta.Inode, error) {
	c, api, ino, err := v.inode(ctx, "GetAttr", ino)
	if err != nil {
		return meta.Inode{}, err
	}
	in, err := api.GetAttr(ctx, ino)
	c.outInode(&in)
	return in, err
}

// SetAttr implements meta.API.
func (v *view) SetAttr(ctx context.Context, ino meta.Ino, req meta.SetAttrReq) (meta.Inode, error) {
	c, api, ino, err := v.inode(ctx, "SetAttr", ino)
	if err != nil {
		return meta.Inode{}, err
	}
	in, err := api.SetAttr(ctx, ino, req)
	c.outInode(&in)
	return in, err
}

// Create implements meta.API.
func (v *view) Create(ctx context.Context, req meta.CreateReq) (meta.Inode, error) {
	c, api, parent, err := v.inode(ctx, "Create", req.Parent)
	if err != nil {
		return meta.Inode{}, err
	}
	req.Parent = parent
	in, err := api.Create(ctx, req)
	c.outInode(&in)
	return in, err
}

// Link implements meta.API.
func (v *view) Link(ctx context.Context, ino, newParent meta.Ino, newName string) (meta.Inode, error) {
	c, api, ino, err := v.inode(ctx, "Link", ino)
	if err == nil {
		newParent, err = v.a.in(ctx, c, "Link", newParent)
	}
	if err != nil {
		return meta.Inode{}, err
	}
	in, err := api.Link(ctx, ino, newParent, newName)
	c.outInode(&in)
	return in, err
}

// Unlink implements meta.API. The reap argument only says which inode the
// caller expects the entry to name, so it is mapped, not checked.
func (v *view) Unlink(ctx context.Context, parent meta.Ino, name string, reap meta.Ino) (meta.Inode, error) {
	c, api, parent, err := v.inode(ctx, "Unlink", parent)
	if err != nil {
		return meta.Inode{}, err
	}
	if c.root != 0 && reap == meta.RootIno {
		reap = c.root
	}
	in, err := api.Unlink(ctx, parent, name, reap)
	c.outInode(&in)
	return in, err
}

// Rmdir implements meta.API.
func (v *view) Rmdir(ctx context.Context, parent meta.Ino, name string) error {
	_, api, parent, err := v.inode(ctx, "Rmdir", parent)
	if err != nil {
		return err
	}
	return api.Rmdir(ctx, parent, name)
}

// Rename implements meta.API.
func (v *view) Rename(ctx context.Context, oldParent meta.Ino, oldName string, newParent meta.Ino, newName string, flags uint32) (meta.Inode, error) {
	c, api, oldParent, err := v.inode(ctx, "Rename", oldParent)
	if err == nil {
		newParent, err = v.a.in(ctx, c, "Rename", newParent)
	}
	if err != nil {
		return meta.Inode{}, err
	}
	replaced, err := api.Rename(ctx, oldParent, oldName, newParent, newName, flags)
	c.outInode(&replaced)
	return replaced, err
}

// ReadDir implements meta.API.
func (v *view) ReadDir(ctx context.Context, dir meta.Ino, after string, limit int, plus bool) ([]meta.DirEntry, bool, error) {
	c, api, dir, err := v.inode(ctx, "ReadDir", dir)
	if err != nil {
		return nil, false, err
	}
	ents, more, err := api.ReadDir(ctx, dir, after, limit, plus)
	for i := range ents {
		ents[i].Ino = c.out(ents[i].Ino)
		if ents[i].Inode != nil {
			c.outInode(ents[i].Inode)
		}
	}
	return ents, more, err
}

// GetRecipe implements meta.API.
func (v *view) GetRecipe(ctx context.Context, ino meta.Ino, first, count uint64) (meta.Recipe, error) {
	_, api, ino, err := v.inode(ctx, "GetRecipe", ino)
	if err != nil {
		return meta.Recipe{}, err
	}
	return api.GetRecipe(ctx, ino, first, count)
}

// Commit implements meta.API.
func (v *view) Commit(ctx context.Context, req meta.CommitReq) (meta.Inode, error) {
	c, api, ino, err := v.inode(ctx, "Commit", req.Ino)
	if err != nil {
		return meta.Inode{}, err
	}
	req.Ino = ino
	in, err := api.Commit(ctx, req)
	c.outInode(&in)
	var conflict *meta.ConflictError
	if errors.As(err, &conflict) {
		conflict.Ino = c.out(conflict.Ino)
	}
	return in, err
}

// Reap implements meta.API.
func (v *view) Reap(ctx context.Context, ino meta.Ino) error {
	_, api, ino, err := v.inode(ctx, "Reap", ino)
	if err != nil {
		return err
	}
	return api.Reap(ctx, ino)
}

// HoldOpen implements meta.API.
func (v *view) HoldOpen(ctx context.Context, ino meta.Ino) (meta.Inode, error) {
	c, api, ino, err := v.inode(ctx, "HoldOpen", ino)
	if err != nil {
		return meta.Inode{}, err
	}
	in, err := api.HoldOpen(ctx, ino)
	c.outInode(&in)
	return in, err
}

// ReleaseOpen implements meta.API. It only drops the calling session's own
// opens, so its inode is mapped, not checked: a file renamed out of the
// subtree while open can still be closed.
func (v *view) ReleaseOpen(ctx context.Context, ino meta.Ino) error {
	c, api, err := v.begin(ctx, "ReleaseOpen")
	if err != nil {
		return err
	}
	if c.root != 0 && ino == meta.RootIno {
		ino = c.root
	}
	return api.ReleaseOpen(ctx, ino)
}

// GetXattr implements meta.API.
func (v *view) GetXattr(ctx context.Context, ino meta.Ino, name string) ([]byte, error) {
	_, api, ino, err := v.inode(ctx, "GetXattr", ino)
	if err != nil {
		return nil, err
	}
	return api.GetXattr(ctx, ino, name)
}

// SetXattr implements meta.API.
func (v *view) SetXattr(ctx context.Context, ino meta.Ino, name string, value []byte, flags uint32) error {
	_, api, ino, err := v.inode(ctx, "SetXattr", ino)
	if err != nil {
		return err
	}
	return api.SetXattr(ctx, ino, name, value, flags)
}

// ListXattr implements meta.API.
func (v *view) ListXattr(ctx context.Context, ino meta.Ino) ([]string, error) {
	_, api, ino, err := v.inode(ctx, "ListXattr", ino)
	if err != nil {
		return nil, err
	}
	return api.ListXattr(ctx, ino)
}

// RemoveXattr implements meta.API.
func (v *view) RemoveXattr(ctx context.Context, ino meta.Ino, name string) error {
	_, api, ino, err := v.inode(ctx, "RemoveXattr", ino)
	if err != nil {
		return err
	}
	return api.RemoveXattr(ctx, ino, name)
}

// Sync implements meta.API.
func (v *view) Sync(ctx context.Context) error {
	_, api, err := v.begin(ctx, "Sync")
	if err != nil {
		return err
	}
	return api.Sync(ctx)
}

// StatFS implements meta.API.
func (v *view) StatFS(ctx context.Context) (meta.StatFS, error) {
	_, api, err := v.begin(ctx, "StatFS")
	if err != nil {
		return meta.StatFS{}, err
	}
	return api.StatFS(ctx)
}

// Servers implements meta.API.
func (v *view) Servers(ctx context.Context) (meta.ServerMap, error) {
	_, api, err := v.begin(ctx, "Servers")
	if err != nil {
		return meta.ServerMap{}, err
	}
	return api.Servers(ctx)
}

// MoverProgress implements meta.API.
func (v *view) MoverProgress(ctx context.Context) (meta.MoverProgress, error) {
	_, api, err := v.begin(ctx, "MoverProgress")
	if err != nil {
		return meta.MoverProgress{}, err
	}
	return api.MoverProgress(ctx)
}

// Decompose implements meta.API.
func (v *view) Decompose(ctx context.Context, h block.Hash) error {
	_, api, err := v.begin(ctx, "Decompose")
	if err != nil {
		return err
	}
	return api.Decompose(ctx, h)
}

// WalkBlocks implements meta.API.
func (v *view) WalkBlocks(ctx context.Context, fn func(ino meta.Ino, index uint64, h block.Hash) error) error {
	_, api, err := v.begin(ctx, "WalkBlocks")
	if err != nil {
		return err
	}
	return api.WalkBlocks(ctx, fn)
}

// ListBlocks implements meta.BlockLister under WalkBlocks' rule, so that
// the RPC's paged walk (gc, fsck) reads each page from where the last
// ended instead of walking every recipe again per page.
func (v *view) ListBlocks(ctx context.Context, afterIno meta.Ino, afterIndex uint64, limit int) ([]meta.BlockRef, bool, error) {
	_, api, err := v.begin(ctx, "WalkBlocks")
	if err != nil {
		return nil, false, err
	}
	return meta.ListBlocksOf(ctx, api, afterIno, afterIndex, limit)
}
