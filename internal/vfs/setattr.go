package vfs

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"tessera/internal/meta"
)

// SetAttr is a change of attributes: the fields Valid names (meta.SetMode,
// SetUid, SetGid, SetSize, SetAtime, SetMtime, SetCtime).
type SetAttr struct {
	Valid               uint32
	Mode                uint32 // permission bits and set-id/sticky bits
	Uid, Gid            uint32
	Size                uint64
	Atime, Mtime, Ctime int64
	// AtimeNow, MtimeNow: the time is the server's now (utimensat's
	// UTIME_NOW), which a non-owner with write permission may set.
	AtimeNow, MtimeNow bool
	// KillSuidgid clears the set-id bits a write would (FUSE's
	// FATTR_KILL_SUIDGID, for a write by a caller without CAP_FSETID).
	KillSuidgid bool
	// BeforeTruncate, if set, is called with the inode before its size
	// changes and returns the inode to truncate, after the fileset rule
	// (beforeTruncate) has run.
	BeforeTruncate func(ctx context.Context, in *meta.Inode) (meta.Inode, error)
}

// SetAttr changes ino's attributes as s says, checked for c (see the
// package comment), and returns the inode after.
func (v *FS) SetAttr(ctx context.Context, c Cred, ino meta.Ino, s SetAttr) (meta.Inode, error) {
	defer v.changed(ino)
	// The writes held for their order come before (reorder.go).
	if err := v.settleIno(ctx, ino); err != nil {
		return meta.Inode{}, err
	}
	// The current attributes are needed for a truncate, to clear set-id
	// bits of a mode not given, and for the checks; otherwise the SetAttr
	// returns them (tar's futimens, fchown and fchmod: one meta call
	// each, not two).
	var in meta.Inode
	var err error
	if s.Valid&meta.SetSize != 0 || s.KillSuidgid || (!c.Checked && s.Valid != 0) {
		var ok bool
		if in, ok = fresh(ctx, ino); !ok {
			if in, err = v.api.GetAttr(ctx, ino); err != nil {
				return in, err
			}
		}
	}
	var req meta.SetAttrReq
	kill := uint32(0)
	if !c.Checked {
		if kill, err = checkSetAttr(c, &in.Attr, &s); err != nil {
			return meta.Inode{}, err
		}
	}
	if s.Valid&meta.SetSize != 0 {
		if in.IsDir() {
			return meta.Inode{}, errorf("truncate", ino, syscall.EISDIR)
		}
		if v.opts.Gateway != nil {
			if in, err = v.beforeTruncate(ctx, &in); err != nil {
				return meta.Inode{}, err
			}
		}
		if s.BeforeTruncate != nil {
			if in, err = s.BeforeTruncate(ctx, &in); err != nil {
				return meta.Inode{}, err
			}
		}
		if in, err = v.c.Truncate(ctx, in, int64(s.Size)); err != nil {
			return meta.Inode{}, err
		}
	}
	now := time.Now().UnixNano()
	if s.Valid&meta.SetMode != 0 {
		req.Valid |= meta.SetMode
		req.Mode = s.Mode &^ syscall.S_IFMT
	}
	if kill != 0 || s.KillSuidgid {
		if req.Valid&meta.SetMode == 0 {
			req.Valid |= meta.SetMode
			req.Mode = in.Mode &^ syscall.S_IFMT
		}
		req.Mode &^= kill
		if s.KillSuidgid {
			req.Mode &^= KillBits(req.Mode)
		}
	}
	if s.Valid&meta.SetUid != 0 {
		req.Valid |= meta.SetUid
		req.Uid = s.Uid
	}
	if s.Valid&meta.SetGid != 0 {
		req.Valid |= meta.SetGid
		req.Gid = s.Gid
	}
	if s.Valid&meta.SetAtime != 0 {
		req.Valid |= meta.SetAtime
		req.Atime = s.Atime
		if s.AtimeNow {
			req.Atime = now
		}
	}
	if s.Valid&meta.SetMtime != 0 {
		req.Valid |= meta.SetMtime
		req.Mtime = s.Mtime
		if s.MtimeNow {
			req.Mtime = now
		}
	}
	if s.Valid&meta.SetCtime != 0 {
		req.Valid |= meta.SetCtime
		req.Ctime = s.Ctime
	}
	if req.Valid&meta.SetMtime != 0 {
		v.c.MtimeSet(ino)
	}
	if would, need := v.c.WouldDeferAttr(ino); would && req.Valid != 0 && s.Valid&meta.SetSize == 0 {
		// Held for the commit of this mount's uncommitted writes to the
		// file, where the policy allows (client/pendattr.go: tar's
		// fchown, fchmod and futimens before its close); the current
		// attributes are read for the first change held only.
		cur := in
		if cur.Ino == 0 && need {
			var ok bool
			if cur, ok = fresh(ctx, ino); !ok {
				if cur, err = v.api.GetAttr(ctx, ino); err != nil {
					return meta.Inode{}, err
				}
			}
		}
		if out, ok := v.c.DeferAttr(ino, req, cur); ok {
			return out, nil
		}
	}
	switch {
	case req.Valid != 0:
		if in, err = v.api.SetAttr(ctx, ino, req); err != nil {
			return meta.Inode{}, err
		}
	case in.Ino == 0:
		if in, err = v.api.GetAttr(ctx, ino); err != nil {
			return meta.Inode{}, err
		}
	}
	v.c.Overlay(&in)
	return in, nil
}

// checkSetAttr checks s against a for c and returns the set-id bits the
// change clears besides what s asks: a truncate by a non-root caller
// clears them as a write does, a chown clears them on a non-directory, a
// chmod by a caller outside the file's group drops S_ISGID.
func checkSetAttr(c Cred, a *meta.Attr, s *SetAttr) (uint32, error) {
	var kill uint32
	if s.Valid&meta.SetSize != 0 {
		if err := check(c, "truncate", a, MayWrite); err != nil {
			return 0, err
		}
		kill |= killOnWrite(c, a.Mode)
	}
	owner := owns(c, a)
	if s.Valid&meta.SetMode != 0 {
		if !owner {
			return 0, fmt.Errorf("chmod inode %d: uid %d is not the owner: %w", a.Ino, c.Uid, syscall.EPERM)
		}
		gid := a.Gid
		if s.Valid&meta.SetGid != 0 {
			gid = s.Gid
		}
		if c.Uid != 0 && !c.inGroup(gid) {
			kill |= syscall.S_ISGID
		}
	}
	if s.Valid&meta.SetUid != 0 && s.Uid != a.Uid && c.Uid != 0 {
		return 0, fmt.Errorf("chown inode %d: only root gives a file away: %w", a.Ino, syscall.EPERM)
	}
	if s.Valid&meta.SetGid != 0 && s.Gid != a.Gid && c.Uid != 0 && (!owner || !c.inGroup(s.Gid)) {
		return 0, fmt.Errorf("chgrp inode %d: uid %d is not the owner or not in group %d: %w", a.Ino, c.Uid, s.Gid, syscall.EPERM)
	}
	if s.Valid&(meta.SetUid|meta.SetGid) != 0 && !a.IsDir() {
		kill |= KillBits(a.Mode)
	}
	for _, t := range []struct {
		bit uint32
		now bool
	}{{meta.SetAtime, s.AtimeNow}, {meta.SetMtime, s.MtimeNow}} {
		if s.Valid&t.bit == 0 || owner {
			continue
		}
		if !t.now {
			return 0, fmt.Errorf("utimes inode %d: uid %d is not the owner: %w", a.Ino, c.Uid, syscall.EPERM)
		}
		if err := check(c, "utimes", a, MayWrite); err != nil {
			return 0, err
		}
	}
	return kill, nil
}
