package metawait

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"

	"tessera/internal/block"
	"tessera/internal/meta"
)

// The calls that are safe to send again as they are are generated
// (zz_metawait_gen.go): each is one call of around, which sends it until
// the service answers (call, without an applied check). Among them SetAttr
// sets absolute attributes, and HoldOpen, sent again after its reply was
// lost, counts the open twice if the first was applied: the session keeps
// the inode until it ends (space kept longer, nothing dropped early); when
// the reply was lost because the meta died, the count died with the
// session, and the client announces its opens again to its new one. A new
// method of meta.FS or meta.Cluster is generated so, as safe to send
// again: one that is not must be written here by hand, with its applied
// check (wrapgen then leaves it out).

//go:generate go run tessera/internal/meta/wrapgen -type *API -recv a -ifaces api -lower all -o zz_metawait_gen.go

// around sends a call the generated methods make until the service
// answers (call).
func (a *API) around(ctx context.Context, op string, call func(context.Context, meta.API) error) error {
	return a.call(ctx, op, func(ctx context.Context) error { return call(ctx, a.API) }, nil)
}

// Commit implements meta.API. A commit whose reply was lost is sent again
// (commitAgain): applied, it conflicts with itself, and is then answered as
// applied; where another client changed its blocks since, it fails with
// meta.ErrMaybeApplied rather than let the caller redo it over that change.
func (a *API) Commit(ctx context.Context, req meta.CommitReq) (out meta.Inode, err error) {
	doubt := false
	err = a.call(ctx, "commit", func(ctx context.Context) (err error) {
		out, err = a.API.Commit(ctx, req)
		if doubt {
			out, err = a.commitAgain(ctx, req, out, err)
		}
		if errors.Is(err, meta.ErrReplyLost) {
			doubt = true
		}
		return err
	}, nil)
	if doubt && err != nil && !errors.Is(err, meta.ErrMaybeApplied) && (meta.Unavailable(err) || ctx.Err() != nil || errors.Is(err, syscall.EINTR)) {
		// Given up on while in doubt: the first may have been applied.
		err = fmt.Errorf("commit of inode %d: %w (%w)", req.Ino, meta.ErrMaybeApplied, err)
	}
	return out, err
}

// ReleaseOpen implements meta.API. A release whose reply was lost is taken as
// applied and not sent again: sent twice it could drop the open of another
// handle of the session and let the inode be deleted while that one is
// still open. At worst the session keeps one open count more, and the inode
// stays until the session ends.
func (a *API) ReleaseOpen(ctx context.Context, ino meta.Ino) error {
	return a.call(ctx, "releaseopen", func(ctx context.Context) error {
		return a.API.ReleaseOpen(ctx, ino)
	}, func(context.Context) (bool, error) { return true, nil })
}

// The session machinery's own calls and WalkBlocks: sent once.

// WalkBlocks implements meta.API.
func (a *API) WalkBlocks(ctx context.Context, fn func(ino meta.Ino, index uint64, h block.Hash) error) error {
	return a.once("walkblocks", func() error { return a.API.WalkBlocks(ctx, fn) })
}

// OpenSession implements meta.API.
func (a *API) OpenSession(ctx context.Context) (out meta.SessionInfo, err error) {
	err = a.once("opensession", func() (err error) {
		out, err = a.API.OpenSession(ctx)
		return err
	})
	return out, err
}

// Callbacks implements meta.API.
func (a *API) Callbacks(ctx context.Context, id meta.SessionID, ack uint64, wait time.Duration) (cbs []meta.Callback, err error) {
	err = a.once("callbacks", func() (err error) {
		cbs, err = a.API.Callbacks(ctx, id, ack, wait)
		return err
	})
	return cbs, err
}

// CloseSession implements meta.API.
func (a *API) CloseSession(ctx context.Context, id meta.SessionID) error {
	return a.once("closesession", func() error { return a.API.CloseSession(ctx, id) })
}

// The calls that are not idempotent: each looks whether an attempt whose
// reply was lost was applied before it sends the call again.

// Create implements meta.API.
func (a *API) Create(ctx context.Context, req meta.CreateReq) (out meta.Inode, err error) {
	var applied func(ctx context.Context) (bool, error)
	typ := req.Mode & syscall.S_IFMT
	if req.Excl || (typ != 0 && typ != syscall.S_IFREG) {
		// Without Excl a regular file's create returns the file that is
		// there: sending it again is harmless.
		applied = func(ctx context.Context) (bool, error) {
			in, err := a.API.Lookup(ctx, req.Parent, req.Name)
			if errors.Is(err, meta.ErrNotFound) {
				return false, nil
			}
			if err != nil || !created(req, &in) {
				return false, err
			}
			out = in
			return true, nil
		}
	}
	err = a.call(ctx, "create", func(ctx context.Context) (err error) {
		out, err = a.API.Create(ctx, req)
		return err
	}, applied)
	return out, err
}

// created reports whether in looks like the inode req made: its type,
// owner and permission bits, and nothing changed since (change counter 1).
func created(req meta.CreateReq, in *meta.Inode) bool {
	typ := req.Mode & syscall.S_IFMT
	if typ == 0 {
		typ = syscall.S_IFREG
	}
	if in.Mode&syscall.S_IFMT != typ || in.Uid != req.Uid || in.Change != 1 {
		return false
	}
	if typ == syscall.S_IFLNK {
		return in.Target == req.Target
	}
	return in.Mode&0777 == req.Mode&0777
}

// Link implements meta.API.
func (a *API) Link(ctx context.Context, ino, newParent meta.Ino, newName string) (out meta.Inode, err error) {
	err = a.call(ctx, "link", func(ctx context.Context) (err error) {
		out, err = a.API.Link(ctx, ino, newParent, newName)
		return err
	}, func(ctx context.Context) (bool, error) {
		in, err := a.API.Lookup(ctx, newParent, newName)
		if errors.Is(err, meta.ErrNotFound) || err == nil && in.Ino != ino {
			return false, nil
		}
		out = in
		return err == nil, err
	})
	return out, err
}

// Unlink implements meta.API.
func (a *API) Unlink(ctx context.Context, parent meta.Ino, name string, reap meta.Ino) (out meta.Inode, err error) {
	err = a.call(ctx, "unlink", func(ctx context.Context) (err error) {
		out, err = a.API.Unlink(ctx, parent, name, reap)
		return err
	}, func(ctx context.Context) (bool, error) {
		in, err := a.API.Lookup(ctx, parent, name)
		if err == nil && (reap == 0 || in.Ino == reap) {
			return false, nil
		}
		if err != nil && !errors.Is(err, meta.ErrNotFound) {
			return false, err
		}
		out = meta.Inode{}
		if reap != 0 {
			out.Ino = reap // deleted with its last link
		}
		return true, nil
	})
	return out, err
}

// Rmdir implements meta.API.
func (a *API) Rmdir(ctx context.Context, parent meta.Ino, name string) error {
	return a.call(ctx, "rmdir", func(ctx context.Context) error {
		return a.API.Rmdir(ctx, parent, name)
	}, func(ctx context.Context) (bool, error) {
		return gone(a.API.Lookup(ctx, parent, name))
	})
}

// gone turns a lookup into "the name is gone".
func gone(_ meta.Inode, err error) (bool, error) {
	if errors.Is(err, meta.ErrNotFound) {
		return true, nil
	}
	return false, err
}

// Rename implements meta.API.
func (a *API) Rename(ctx context.Context, oldParent meta.Ino, oldName string, newParent meta.Ino, newName string, flags uint32) (out meta.Inode, err error) {
	applied := func(ctx context.Context) (bool, error) {
		return gone(a.API.Lookup(ctx, oldParent, oldName))
	}
	if flags&meta.RenameExchange != 0 {
		// Both names stay; only the inode the old name names tells.
		before, lerr := a.Lookup(ctx, oldParent, oldName)
		applied = func(ctx context.Context) (bool, error) {
			in, err := a.API.Lookup(ctx, oldParent, oldName)
			return lerr == nil && err == nil && in.Ino != before.Ino, err
		}
	}
	err = a.call(ctx, "rename", func(ctx context.Context) (err error) {
		out, err = a.API.Rename(ctx, oldParent, oldName, newParent, newName, flags)
		return err
	}, func(ctx context.Context) (bool, error) {
		done, err := applied(ctx)
		if done {
			out = meta.Inode{} // what it replaced is not known
		}
		return done, err
	})
	return out, err
}

// SetXattr implements meta.API.
func (a *API) SetXattr(ctx context.Context, ino meta.Ino, name string, value []byte, flags uint32) error {
	var applied func(ctx context.Context) (bool, error)
	if flags&meta.XattrCreate != 0 {
		applied = func(ctx context.Context) (bool, error) {
			v, err := a.API.GetXattr(ctx, ino, name)
			if errors.Is(err, meta.ErrNoAttr) {
				return false, nil
			}
			return err == nil && bytes.Equal(v, value), err
		}
	}
	return a.call(ctx, "setxattr", func(ctx context.Context) error {
		return a.API.SetXattr(ctx, ino, name, value, flags)
	}, applied)
}

// RemoveXattr implements meta.API.
func (a *API) RemoveXattr(ctx context.Context, ino meta.Ino, name string) error {
	return a.call(ctx, "removexattr", func(ctx context.Context) error {
		return a.API.RemoveXattr(ctx, ino, name)
	}, func(ctx context.Context) (bool, error) {
		_, err := a.API.GetXattr(ctx, ino, name)
		if errors.Is(err, meta.ErrNoAttr) {
			return true, nil
		}
		return false, err
	})
}
