// Package mountroot shows a meta.API from one of its directories: a mount
// of NAME:/sub/dir (issue 13's global namespace) sees /sub/dir as its root.
//
// The FUSE layer names inodes by their numbers, the root being
// meta.RootIno. New(api, dir) swaps two numbers in every call and reply:
// meta.RootIno stands for dir, and dir for meta.RootIno. The swap is its
// own inverse, so arguments and replies go through the same map and no
// number stands for two inodes. Nothing else changes: permissions are
// checked as on any mount, by the kernel against the attributes the meta
// service keeps, and by the service against the caller's identity (a
// certificate confined with --root is confined by the service whatever
// the mount shows). A name outside dir is reached only through numbers
// the service hands out under dir, and ".." of the mount's root is the
// kernel's business: it stays at the mount point.
package mountroot

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	"tessera/internal/block"
	"tessera/internal/meta"
)

// Walk looks the absolute path dir up from meta.RootIno and returns its
// inode; it must be a directory.
func Walk(ctx context.Context, api meta.API, dir string) (meta.Ino, error) {
	if !strings.HasPrefix(dir, "/") {
		return 0, fmt.Errorf("mount root %q: not an absolute path: %w", dir, meta.ErrInvalid)
	}
	ino := meta.RootIno
	for _, name := range strings.Split(strings.Trim(path.Clean(dir), "/"), "/") {
		if name == "" {
			continue
		}
		in, err := api.Lookup(ctx, ino, name)
		if err != nil {
			return 0, fmt.Errorf("mount root %s: %s: %w", dir, name, err)
		}
		if !in.IsDir() {
			return 0, fmt.Errorf("mount root %s: %s is not a directory: %w", dir, name, meta.ErrNotDir)
		}
		ino = in.Ino
	}
	return ino, nil
}

// API is a meta.API seen from a directory. Its methods are written by
// hand, not generated (internal/meta/wrapgen): each maps different fields
// of its arguments and replies (inode numbers in requests, directory
// entries, fileset roots, queued operations, quota directories), and a
// generated pass-through would hand a new method's inode numbers on
// unmapped, reaching the wrong inode without a word. Since API embeds no
// meta.API, a new method of meta.API does not compile until it is written
// here.
type API struct {
	api  meta.API
	root meta.Ino
}

var (
	_ meta.API           = (*API)(nil)
	_ meta.SessionBinder = (*API)(nil)
	_ meta.BlockLister   = (*API)(nil)
)

// New returns api seen from its directory root; root meta.RootIno returns
// api itself.
func New(api meta.API, root meta.Ino) meta.API {
	if root == meta.RootIno || root == 0 {
		return api
	}
	return &API{api: api, root: root}
}

// m swaps meta.RootIno and the root; it maps both ways.
func (a *API) m(ino meta.Ino) meta.Ino {
	switch ino {
	case meta.RootIno:
		return a.root
	case a.root:
		return meta.RootIno
	}
	return ino
}

func (a *API) inode(in meta.Inode, err error) (meta.Inode, error) {
	a.mapInode(&in)
	return in, a.e(err)
}

// mapInode maps an inode's number and its fileset's root (on a copy of
// the gateway section: the caller's may be shared).
func (a *API) mapInode(in *meta.Inode) {
	in.Ino = a.m(in.Ino)
	if in.Gateway != nil {
		g := *in.Gateway
		g.Fileset = a.m(g.Fileset)
		in.Gateway = &g
	}
}

// e maps the inode of a commit conflict.
func (a *API) e(err error) error {
	var ce *meta.ConflictError
	if errors.As(err, &ce) {
		ce.Ino = a.m(ce.Ino)
	}
	return err
}

// WithSession implements meta.SessionBinder when the API below does.
func (a *API) WithSession(id meta.SessionID) meta.API {
	sb, ok := a.api.(meta.SessionBinder)
	if !ok {
		return a
	}
	return &API{api: sb.WithSession(id), root: a.root}
}

// Lookup implements meta.API.
func (a *API) Lookup(ctx context.Context, parent meta.Ino, name string) (meta.Inode, error) {
	return a.inode(a.api.Lookup(ctx, a.m(parent), name))
}

// GetAttr implements meta.API.
func (a *API) GetAttr(ctx context.Context, ino meta.Ino) (meta.Inode, error) {
	return a.inode(a.api.GetAttr(ctx, a.m(ino)))
}

// SetAttr implements meta.API.
func (a *API) SetAttr(ctx context.Context, ino meta.Ino, req meta.SetAttrReq) (meta.Inode, error) {
	return a.inode(a.api.SetAttr(ctx, a.m(ino), req))
}

// Create implements meta.API.
func (a *API) Create(ctx context.Context, req meta.CreateReq) (meta.Inode, error) {
	req.Parent = a.m(req.Parent)
	return a.inode(a.api.Create(ctx, req))
}

// Link implements meta.API.
func (a *API) Link(ctx context.Context, ino, newParent meta.Ino, newName string) (meta.Inode, error) {
	return a.inode(a.api.Link(ctx, a.m(ino), a.m(newParent), newName))
}

// Unlink implements meta.API.
func (a *API) Unlink(ctx context.Context, parent meta.Ino, name string, reap meta.Ino) (meta.Inode, error) {
	if reap != 0 {
		reap = a.m(reap)
	}
	return a.inode(a.api.Unlink(ctx, a.m(parent), name, reap))
}

// Rmdir implements meta.API.
func (a *API) Rmdir(ctx context.Context, parent meta.Ino, name string) error {
	return a.api.Rmdir(ctx, a.m(parent), name)
}

// Rename implements meta.API.
func (a *API) Rename(ctx context.Context, oldParent meta.Ino, oldName string, newParent meta.Ino, newName string, flags uint32) (meta.Inode, error) {
	in, err := a.api.Rename(ctx, a.m(oldParent), oldName, a.m(newParent), newName, flags)
	if in.Ino == 0 {
		return in, err // replaced nothing
	}
	return a.inode(in, err)
}

// ReadDir implements meta.API.
func (a *API) ReadDir(ctx context.Context, dir meta.Ino, after string, limit int, plus bool) ([]meta.DirEntry, bool, error) {
	ents, more, err := a.api.ReadDir(ctx, a.m(dir), after, limit, plus)
	for i := range ents {
		ents[i].Ino = a.m(ents[i].Ino)
		if ents[i].Inode != nil {
			a.mapInode(ents[i].Inode)
		}
	}
	return ents, more, err
}

// GetRecipe implements meta.API.
func (a *API) GetRecipe(ctx context.Context, ino meta.Ino, first, count uint64) (meta.Recipe, error) {
	return a.api.GetRecipe(ctx, a.m(ino), first, count)
}

// Commit implements meta.API.
func (a *API) Commit(ctx context.Context, req meta.CommitReq) (meta.Inode, error) {
	req.Ino = a.m(req.Ino)
	return a.inode(a.api.Commit(ctx, req))
}

// Reap implements meta.API.
func (a *API) Reap(ctx context.Context, ino meta.Ino) error { return a.api.Reap(ctx, a.m(ino)) }

// HoldOpen implements meta.API.
func (a *API) HoldOpen(ctx context.Context, ino meta.Ino) (meta.Inode, error) {
	return a.inode(a.api.HoldOpen(ctx, a.m(ino)))
}

// ReleaseOpen implements meta.API.
func (a *API) ReleaseOpen(ctx context.Context, ino meta.Ino) error {
	return a.api.ReleaseOpen(ctx, a.m(ino))
}

// GetXattr implements meta.API.
func (a *API) GetXattr(ctx context.Context, ino meta.Ino, name string) ([]byte, error) {
	return a.api.GetXattr(ctx, a.m(ino), name)
}

// SetXattr implements meta.API.
func (a *API) SetXattr(ctx context.Context, ino meta.Ino, name string, value []byte, flags uint32) error {
	return a.api.SetXattr(ctx, a.m(ino), name, value, flags)
}

// ListXattr implements meta.API.
func (a *API) ListXattr(ctx context.Context, ino meta.Ino) ([]string, error) {
	return a.api.ListXattr(ctx, a.m(ino))
}

// RemoveXattr implements meta.API.
func (a *API) RemoveXattr(ctx context.Context, ino meta.Ino, name string) error {
	return a.api.RemoveXattr(ctx, a.m(ino), name)
}

// Sync implements meta.API.
func (a *API) Sync(ctx context.Context) error { return a.api.Sync(ctx) }

// StatFS implements meta.API.
func (a *API) StatFS(ctx context.Context) (meta.StatFS, error) { return a.api.StatFS(ctx) }

// Servers implements meta.API.
func (a *API) Servers(ctx context.Context) (meta.ServerMap, error) { return a.api.Servers(ctx) }

// RegisterServer implements meta.API.
func (a *API) RegisterServer(ctx context.Context, s meta.Server) (meta.ServerMap, error) {
	return a.api.RegisterServer(ctx, s)
}

// SetServerState implements meta.API.
func (a *API) SetServerState(ctx context.Context, id, state string) (meta.ServerMap, error) {
	return a.api.SetServerState(ctx, id, state)
}

// SetReplicas implements meta.API.
func (a *API) SetReplicas(ctx context.Context, r int) (meta.ServerMap, error) {
	return a.api.SetReplicas(ctx, r)
}

// MoverProgress implements meta.API; lost blocks' inodes are mapped.
func (a *API) MoverProgress(ctx context.Context) (meta.MoverProgress, error) {
	p, err := a.api.MoverProgress(ctx)
	for i := range p.LostBlocks {
		for j := range p.LostBlocks[i].Inos {
			p.LostBlocks[i].Inos[j] = a.m(p.LostBlocks[i].Inos[j])
		}
	}
	return p, err
}

// Decompose implements meta.API.
func (a *API) Decompose(ctx context.Context, h block.Hash) error { return a.api.Decompose(ctx, h) }

// WalkBlocks implements meta.API.
func (a *API) WalkBlocks(ctx context.Context, fn func(ino meta.Ino, index uint64, h block.Hash) error) error {
	return a.api.WalkBlocks(ctx, func(ino meta.Ino, index uint64, h block.Hash) error { return fn(a.m(ino), index, h) })
}

// ListBlocks implements meta.BlockLister, through WalkBlocks' pages when
// the API below lists none itself (meta.ListBlocksOf).
func (a *API) ListBlocks(ctx context.Context, afterIno meta.Ino, afterIndex uint64, limit int) ([]meta.BlockRef, bool, error) {
	// The cursor is the last ref the caller read, mapped: map it back.
	refs, more, err := meta.ListBlocksOf(ctx, a.api, a.m(afterIno), afterIndex, limit)
	for i := range refs {
		refs[i].Ino = a.m(refs[i].Ino)
	}
	return refs, more, err
}

// OpenSession implements meta.API.
func (a *API) OpenSession(ctx context.Context) (meta.SessionInfo, error) {
	return a.api.OpenSession(ctx)
}

// Callbacks implements meta.API; the callbacks' inodes are mapped.
func (a *API) Callbacks(ctx context.Context, id meta.SessionID, ack uint64, wait time.Duration) ([]meta.Callback, error) {
	cbs, err := a.api.Callbacks(ctx, id, ack, wait)
	for i := range cbs {
		cbs[i].Ino = a.m(cbs[i].Ino)
		if cbs[i].Inode.Ino != 0 {
			cbs[i].Inode.Ino = a.m(cbs[i].Inode.Ino)
		}
	}
	return cbs, err
}

// CloseSession implements meta.API.
func (a *API) CloseSession(ctx context.Context, id meta.SessionID) error {
	return a.api.CloseSession(ctx, id)
}
