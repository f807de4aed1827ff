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

// API is a meta.API seen from a directory. Its methods are generated
// (zz_mountroot_gen.go, internal/meta/wrapgen -style mountroot): meta.Ino
// arguments go through m, and every argument and result of a type that
// carries inode numbers through the type's mapper written here and in
// optional.go and quota.go (mapInode, mapQuota, mapWBOp, ...). The
// generator refuses a type that may carry an inode number and has no
// mapper, so the few methods that map otherwise (entries, requests'
// fields, callbacks, lost blocks, block walks) are written here by hand.
// API embeds no meta.API: a new method is generated or, when its shape is
// refused, fails `go generate` until its type's mapper or the method is
// written.
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

// mapCreateReq maps the parent a create names.
func (a *API) mapCreateReq(req *meta.CreateReq) { req.Parent = a.m(req.Parent) }

// mapCommitReq maps the file a commit names.
func (a *API) mapCommitReq(req *meta.CommitReq) { req.Ino = a.m(req.Ino) }

// mapDirEntry maps an entry of a reply and its inode (the reply's own).
func (a *API) mapDirEntry(e *meta.DirEntry) {
	e.Ino = a.m(e.Ino)
	if e.Inode != nil {
		a.mapInode(e.Inode)
	}
}

// mapMoverProgress maps the inodes of the lost blocks' files.
func (a *API) mapMoverProgress(p *meta.MoverProgress) {
	for i := range p.LostBlocks {
		for j := range p.LostBlocks[i].Inos {
			p.LostBlocks[i].Inos[j] = a.m(p.LostBlocks[i].Inos[j])
		}
	}
}

// mapCallback maps a callback's inode and, when it carries one, the
// inode after the change.
func (a *API) mapCallback(cb *meta.Callback) {
	cb.Ino = a.m(cb.Ino)
	if cb.Inode.Ino != 0 {
		cb.Inode.Ino = a.m(cb.Inode.Ino)
	}
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
