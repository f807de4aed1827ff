package vfs

import (
	"fmt"
	"slices"
	"syscall"

	"tessera/internal/meta"
)

// Cred is who makes a call: the uid, gid and supplementary groups the
// permission checks use, and the owner of what the call creates.
type Cred struct {
	Uid, Gid uint32
	Groups   []uint32
	// Checked says the caller's permissions were checked before the call
	// (FUSE's default_permissions: by the kernel): vfs checks none.
	Checked bool
}

// Root is the superuser, checked like any caller (root passes every check
// but executing a file without an execute bit).
var Root = Cred{}

// MaxGroups bounds the supplementary groups of a Cred (AUTH_SYS sends at
// most 16).
const MaxGroups = 16

// Access bits, as access(2)'s mask.
const (
	MayExec  uint32 = 1
	MayWrite uint32 = 2
	MayRead  uint32 = 4
)

// inGroup reports whether gid is c's group or one of its supplementary
// groups.
func (c Cred) inGroup(gid uint32) bool {
	return c.Gid == gid || slices.Contains(c.Groups, gid)
}

// Permits reports whether c may access a as mask (MayRead|MayWrite|
// MayExec) asks: the owner's bits for the owner, else the group's for a
// member of the group (also through a supplementary group), else the
// others'. Root may do anything but execute a non-directory that has no
// execute bit at all.
func Permits(c Cred, a *meta.Attr, mask uint32) bool {
	if c.Checked || mask == 0 {
		return true
	}
	if c.Uid == 0 {
		return mask&MayExec == 0 || a.IsDir() || a.Mode&0o111 != 0
	}
	var perm uint32
	switch {
	case c.Uid == a.Uid:
		perm = a.Mode >> 6 & 7
	case c.inGroup(a.Gid):
		perm = a.Mode >> 3 & 7
	default:
		perm = a.Mode & 7
	}
	return mask&perm == mask
}

// check returns EACCES, naming op and the inode, when c may not access a
// as mask asks.
func check(c Cred, op string, a *meta.Attr, mask uint32) error {
	if Permits(c, a, mask) {
		return nil
	}
	return fmt.Errorf("%s inode %d: uid %d may not %s it: %w", op, a.Ino, c.Uid, maskWords(mask), syscall.EACCES)
}

func maskWords(mask uint32) string {
	s := ""
	for _, b := range []struct {
		bit  uint32
		word string
	}{{MayRead, "read"}, {MayWrite, "write"}, {MayExec, "search or execute"}} {
		if mask&b.bit != 0 {
			if s != "" {
				s += " and "
			}
			s += b.word
		}
	}
	return s
}

// owns reports whether c may change a's mode, owner or times as only an
// owner may: c owns it or is root.
func owns(c Cred, a *meta.Attr) bool { return c.Checked || c.Uid == 0 || c.Uid == a.Uid }

// mayRemove checks the sticky bit: in a sticky directory only the owner
// of the entry, the owner of the directory or root may remove or rename
// the entry (EPERM otherwise, as Linux answers).
func mayRemove(c Cred, op string, dir, victim *meta.Attr) error {
	if c.Checked || dir.Mode&syscall.S_ISVTX == 0 || c.Uid == 0 || c.Uid == dir.Uid || c.Uid == victim.Uid {
		return nil
	}
	return fmt.Errorf("%s inode %d in sticky directory %d: uid %d owns neither: %w", op, victim.Ino, dir.Ino, c.Uid, syscall.EPERM)
}

// killOnWrite returns the set-id bits a write (or truncate) by c clears
// from mode: S_ISUID, and S_ISGID when the file is group-executable (a
// set-group-ID file without group execute is mandatory locking's mark, not
// a privilege). Root (CAP_FSETID) clears none.
func killOnWrite(c Cred, mode uint32) uint32 {
	if c.Checked || c.Uid == 0 {
		return 0
	}
	return KillBits(mode)
}

// KillBits are the set-id bits of mode that a write by a caller without
// CAP_FSETID clears.
func KillBits(mode uint32) uint32 {
	kill := uint32(syscall.S_ISUID)
	if mode&syscall.S_IXGRP != 0 {
		kill |= syscall.S_ISGID
	}
	return mode & kill
}
