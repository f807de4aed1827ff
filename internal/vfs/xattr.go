package vfs

import (
	"context"
	"fmt"
	"strings"
	"syscall"

	"tessera/internal/meta"
)

// Extended attributes. Permissions for a caller not Checked, as Linux
// has them: a user.* value needs read permission to read and write
// permission to set or remove, and only regular files and directories
// hold them (ENODATA to read, EPERM to set elsewhere); trusted.* is root's
// (hidden from others: ENODATA, and EPERM to set); security.* is read by
// anyone and set by root only; a namespace other than these four is
// EOPNOTSUPP. POSIX ACL attributes (system.posix_acl_*) need kernel ACL
// support that a mount does not turn on: reading one is ENODATA, setting
// one EOPNOTSUPP, for every caller.

// aclName reports POSIX ACL attributes.
func aclName(name string) bool { return strings.HasPrefix(name, "system.posix_acl_") }

// xattrOp is what an xattr call does, for mayXattr.
type xattrOp int

const (
	xattrGet xattrOp = iota
	xattrSet
)

// mayXattr checks that c may read (get) or change (set) xattr name of in.
func mayXattr(c Cred, in *meta.Inode, name string, op xattrOp) error {
	if c.Checked {
		return nil
	}
	ns, _, _ := strings.Cut(name, ".")
	verb := [...]string{"read", "change"}[op]
	switch ns {
	case "user":
		if !in.IsRegular() && !in.IsDir() {
			if op == xattrGet {
				return fmt.Errorf("getxattr inode %d: a user attribute of a special file: %w", in.Ino, syscall.ENODATA)
			}
			return fmt.Errorf("setxattr inode %d: user attributes belong to regular files and directories: %w", in.Ino, syscall.EPERM)
		}
		mask := MayRead
		if op == xattrSet {
			mask = MayWrite
		}
		return check(c, verb+" xattr of", &in.Attr, mask)
	case "trusted":
		if c.Uid == 0 {
			return nil
		}
		if op == xattrGet {
			return fmt.Errorf("getxattr inode %d: trusted attributes are root's: %w", in.Ino, syscall.ENODATA)
		}
		return fmt.Errorf("setxattr inode %d: uid %d may not %s a trusted attribute: %w", in.Ino, c.Uid, verb, syscall.EPERM)
	case "security":
		if op == xattrGet || c.Uid == 0 {
			return nil
		}
		return fmt.Errorf("setxattr inode %d: uid %d may not %s a security attribute: %w", in.Ino, c.Uid, verb, syscall.EPERM)
	case "system":
		return fmt.Errorf("xattr inode %d: system attributes other than ACLs are not kept: %w", in.Ino, syscall.EOPNOTSUPP)
	default:
		return fmt.Errorf("xattr inode %d: an attribute name outside the user, trusted, security and system namespaces: %w", in.Ino, syscall.EOPNOTSUPP)
	}
}

// attrFor returns ino's attributes for a permission check, none for a
// Checked caller.
func (v *FS) attrFor(ctx context.Context, c Cred, ino meta.Ino) (meta.Inode, error) {
	if c.Checked {
		return meta.Inode{}, nil
	}
	return v.api.GetAttr(ctx, ino)
}

// GetXattr returns the value of ino's xattr name (ENODATA if absent).
func (v *FS) GetXattr(ctx context.Context, c Cred, ino meta.Ino, name string) ([]byte, error) {
	if aclName(name) {
		return nil, fmt.Errorf("getxattr inode %d: POSIX ACLs are not kept: %w", ino, syscall.ENODATA)
	}
	in, err := v.attrFor(ctx, c, ino)
	if err != nil {
		return nil, err
	}
	if err := mayXattr(c, &in, name, xattrGet); err != nil {
		return nil, err
	}
	return v.c.GetXattr(ctx, ino, name)
}

// ListXattr returns the names of ino's xattrs (no permission needed;
// trusted.* names are listed to root only).
func (v *FS) ListXattr(ctx context.Context, c Cred, ino meta.Ino) ([]string, error) {
	names, err := v.api.ListXattr(ctx, ino)
	if err != nil || c.Checked || c.Uid == 0 {
		return names, err
	}
	out := names[:0:0]
	for _, n := range names {
		if !strings.HasPrefix(n, "trusted.") {
			out = append(out, n)
		}
	}
	return out, nil
}

// SetXattr sets ino's xattr name to value (flags: XATTR_CREATE,
// XATTR_REPLACE as setxattr(2)).
func (v *FS) SetXattr(ctx context.Context, c Cred, ino meta.Ino, name string, value []byte, flags uint32) error {
	if aclName(name) {
		return fmt.Errorf("setxattr inode %d: POSIX ACLs are not kept: %w", ino, syscall.EOPNOTSUPP)
	}
	in, err := v.attrFor(ctx, c, ino)
	if err != nil {
		return err
	}
	if err := mayXattr(c, &in, name, xattrSet); err != nil {
		return err
	}
	defer v.changed(ino)
	return v.c.SetXattr(ctx, ino, name, value, flags)
}

// RemoveXattr removes ino's xattr name (ENODATA if absent).
func (v *FS) RemoveXattr(ctx context.Context, c Cred, ino meta.Ino, name string) error {
	in, err := v.attrFor(ctx, c, ino)
	if err != nil {
		return err
	}
	if err := mayXattr(c, &in, name, xattrSet); err != nil {
		return err
	}
	defer v.changed(ino)
	return v.c.RemoveXattr(ctx, ino, name)
}
