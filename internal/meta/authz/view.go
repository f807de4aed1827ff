package authz

import (
	"context"
	"errors"
	"fmt"

	"tessera/internal/auth"
	"tessera/internal/meta"
)

// view is the decorator's meta.API, unbound (sid 0) or bound to a session.
// Most of its methods are generated (zz_view_gen.go, internal/meta/wrapgen
// -style authz) from the //tessera:authz directive on each method in
// package meta: each authorizes the call, checks its meta.Ino arguments
// against a confined caller's root and maps its meta.Inode results; a
// result of another type that carries inode numbers goes through the
// type's out<T> mapper written here (quota.go's outQuota), and a logged
// call's struct argument through its log<T> (logQuota, logFileset). The
// generator refuses a method without a directive, and a subtree method
// whose arguments or results carry inode numbers in a type without a
// mapper; those are written here by hand (Create, Unlink, ReadDir,
// Commit, ReleaseOpen, ListBlocks), as are the ones that check more
// (admin.go, session.go, gateways.go).
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
