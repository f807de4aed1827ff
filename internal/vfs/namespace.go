package vfs

import (
	"context"
	"fmt"
	"syscall"

	"tessera/internal/meta"
)

// Create makes req.Name in req.Parent (a file, directory, symlink or
// special file, as req.Mode's type says), owned by c: write and search
// permission on the parent needed. The meta service gives it the parent's
// group and S_ISGID when the parent has S_ISGID.
func (v *FS) Create(ctx context.Context, c Cred, req meta.CreateReq) (meta.Inode, error) {
	if !c.Checked {
		if !req.Tmpfile {
			if err := checkName("create", req.Name); err != nil {
				return meta.Inode{}, err
			}
		}
		if _, err := v.dir(ctx, c, "create", req.Parent, MayWrite|MayExec); err != nil {
			return meta.Inode{}, err
		}
	}
	req.Uid, req.Gid = c.Uid, c.Gid
	mark, called := v.c.LeaseMark() // before the call, whose lease it is
	in, err := v.api.Create(ctx, req)
	v.entriesChanged(req.Parent)
	if err != nil {
		return meta.Inode{}, err
	}
	if req.Excl {
		// A new inode, which no one else has changed yet (an existing
		// one, returned without Excl, may be changing meanwhile).
		f := v.begin()
		f.mark, f.called = mark, called && f.mark == mark && f.called
		v.keep(f, in)
	}
	if !req.Tmpfile {
		// An unlink of the name spares the client its lookup (names.go),
		// as after a Lookup of it.
		v.names.put(req.Parent, req.Name, in.Ino, in.Mode)
	}
	v.noteCreated(&in)
	v.c.Overlay(&in)
	return in, nil
}

// victim checks that c may remove or rename parent/name away: write and
// search permission on parent and the sticky rule. It returns the entry
// (zero for a Checked caller, and, unless need, when the sticky rule
// passes c whoever owns the entry: not looked up then).
func (v *FS) victim(ctx context.Context, c Cred, op string, parent meta.Ino, name string, need bool) (meta.Inode, error) {
	if c.Checked {
		return meta.Inode{}, nil
	}
	if err := checkName(op, name); err != nil {
		return meta.Inode{}, err
	}
	d, err := v.dir(ctx, c, op, parent, MayWrite|MayExec)
	if err != nil {
		return meta.Inode{}, err
	}
	if !need && (d.Mode&syscall.S_ISVTX == 0 || c.Uid == 0 || c.Uid == d.Uid) {
		return meta.Inode{}, nil
	}
	in, err := v.api.Lookup(ctx, parent, name)
	if err != nil {
		return meta.Inode{}, err
	}
	return in, mayRemove(c, op, &d.Attr, &in.Attr)
}

// Unlink removes the non-directory parent/name.
// The inode the name held when last listed or looked up (names.go), or
// the one the permission check looked up, spares the client its lookup.
func (v *FS) Unlink(ctx context.Context, c Cred, parent meta.Ino, name string) error {
	in, err := v.victim(ctx, c, "unlink", parent, name, false)
	if err != nil {
		return err
	}
	hint, ok := v.names.take(parent, name)
	if in.Ino != 0 && !in.IsDir() {
		hint, ok = in.Ino, true
	}
	var out meta.Inode
	if ok {
		out, err = v.c.UnlinkHinted(ctx, parent, name, hint)
	} else {
		out, err = v.c.Unlink(ctx, parent, name)
	}
	v.entriesChanged(parent)
	v.changed(hint, out.Ino)
	return err
}

// Rmdir removes the empty directory parent/name.
func (v *FS) Rmdir(ctx context.Context, c Cred, parent meta.Ino, name string) error {
	if _, err := v.victim(ctx, c, "rmdir", parent, name, false); err != nil {
		return err
	}
	defer v.changedAll() // the directory removed is not known by inode
	return v.api.Rmdir(ctx, parent, name)
}

// Rename moves oldParent/oldName to newParent/newName (flags:
// meta.RenameNoReplace, meta.RenameExchange). Both parents need write and
// search permission, the sticky rule holds for the entry moved and the
// one replaced, and a directory moved to another parent needs write
// permission on itself (its ".." changes). An inode the rename left
// without a name is reaped (or when this client's last handle goes).
func (v *FS) Rename(ctx context.Context, c Cred, oldParent meta.Ino, oldName string, newParent meta.Ino, newName string, flags uint32) error {
	if !c.Checked {
		moved, err := v.victim(ctx, c, "rename", oldParent, oldName, true)
		if err != nil {
			return err
		}
		if err := checkName("rename", newName); err != nil {
			return err
		}
		d, err := v.dir(ctx, c, "rename", newParent, MayWrite|MayExec)
		if err != nil {
			return err
		}
		if old, err := v.api.Lookup(ctx, newParent, newName); err == nil {
			if err := mayRemove(c, "rename", &d.Attr, &old.Attr); err != nil {
				return err
			}
		}
		if moved.IsDir() && oldParent != newParent {
			if err := check(c, "rename", &moved.Attr, MayWrite); err != nil {
				return err
			}
		}
	}
	replaced, err := v.api.Rename(ctx, oldParent, oldName, newParent, newName, flags)
	v.changedAll() // the parents, the inode moved (ctime, a directory's ..), the one replaced
	if err != nil {
		return err
	}
	if replaced.Ino != 0 && replaced.Nlink == 0 && !replaced.IsDir() {
		if err := v.c.Unlinked(ctx, replaced.Ino); err != nil {
			v.log.Warn("reap after rename failed", "inode", replaced.Ino, "err", err)
		}
	}
	return nil
}

// Link gives ino the name newParent/newName (write and search permission
// on newParent needed; directories get EPERM from the meta service).
func (v *FS) Link(ctx context.Context, c Cred, ino, newParent meta.Ino, newName string) (meta.Inode, error) {
	if !c.Checked {
		if err := checkName("link", newName); err != nil {
			return meta.Inode{}, err
		}
		if _, err := v.dir(ctx, c, "link", newParent, MayWrite|MayExec); err != nil {
			return meta.Inode{}, err
		}
	}
	in, err := v.api.Link(ctx, ino, newParent, newName)
	v.changed(ino)
	v.entriesChanged(newParent)
	if err != nil {
		return meta.Inode{}, err
	}
	v.c.Overlay(&in)
	return in, nil
}

// ReadDir lists directory dir after `after`, at most limit entries (read
// permission needed; plus fills each entry's Inode).
func (v *FS) ReadDir(ctx context.Context, c Cred, dir meta.Ino, after string, limit int, plus bool) ([]meta.DirEntry, bool, error) {
	if _, err := v.dir(ctx, c, "readdir", dir, MayRead); err != nil {
		return nil, false, err
	}
	return v.api.ReadDir(ctx, dir, after, limit, plus)
}

// KillSuidgid clears ino's S_ISUID, and S_ISGID if it is group-executable,
// as a write by a caller without CAP_FSETID must (FUSE flags direct-I/O
// writes with WRITE_KILL_SUIDGID for any such caller, whatever the mode,
// so the mode is looked up first). It reports whether it changed the mode.
func (v *FS) KillSuidgid(ctx context.Context, ino meta.Ino) (bool, error) {
	in, err := v.api.GetAttr(ctx, ino)
	if err != nil {
		return false, err
	}
	mode := in.Mode &^ syscall.S_IFMT
	kill := KillBits(mode)
	if kill == 0 {
		return false, nil
	}
	defer v.changed(ino)
	if _, err = v.api.SetAttr(ctx, ino, meta.SetAttrReq{Valid: meta.SetMode, Mode: mode &^ kill}); err != nil {
		return true, fmt.Errorf("clearing set-id bits of inode %d: %w", ino, err)
	}
	return true, nil
}
