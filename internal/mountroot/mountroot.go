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

// API is a meta.API seen from a directory. The methods whose only inode
// numbers are meta.Ino arguments and meta.Inode results are generated
// (zz_mountroot_gen.go, internal/meta/wrapgen -style mountroot); the
// generator refuses any other shape that may carry an inode number, so
// the methods that map other fields (entries, requests' fields, fileset
// roots, queued operations, quota directories, callbacks, lost blocks)
// are written here and in optional.go and quota.go by hand. API embeds no
// meta.API: a new method is generated or, when its shape is refused,
// fails `go generate` until it is written by hand.
//
//go:generate go run tessera/internal/meta/wrapgen -type *API -recv a -ifaces api,optional -style mountroot -o zz_mountroot_gen.go
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

// Create implements meta.API.
func (a *API) Create(ctx context.Context, req meta.CreateReq) (meta.Inode, error) {
	req.Parent = a.m(req.Parent)
	return a.inode(a.api.Create(ctx, req))
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

// Commit implements meta.API.
func (a *API) Commit(ctx context.Context, req meta.CommitReq) (meta.Inode, error) {
	req.Ino = a.m(req.Ino)
	return a.inode(a.api.Commit(ctx, req))
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
