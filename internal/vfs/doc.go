// Package vfs is the one file-system layer every Tessera front end shares
// (issue 24): the FUSE mount (internal/fuse) and the NFS server
// (internal/nfs) call it by inode, with the caller's credentials on every
// call, and it speaks to the meta service and the client package.
//
// Permissions: vfs checks POSIX permissions against the attributes the meta
// service keeps (perm.go): owner, group and supplementary groups, other;
// root passes every check but executing a file with no execute bit; sticky
// directories let only the owner of an entry, of the directory or root
// remove or rename it; chmod, chown and explicit times need the owner or
// root; a write or truncate by a caller other than root clears S_ISUID, and
// S_ISGID of a group-executable file; a chown clears both on a
// non-directory; a chmod by a caller not in the file's group drops S_ISGID.
// A caller whose permissions were checked already (Cred.Checked: the
// kernel's default_permissions for FUSE) is checked for none of them.
//
// Errors are errnos (syscall.Errno, wrapped): front ends map them to their
// protocol's codes.
//
// Conventions of the client that every front end follows live here:
// attributes of an inode pass through client.Overlay (this client's
// writes not committed yet), a stat of an open file may be answered from
// client.StatFallback while the meta service is unavailable, an mtime set
// on an open file is recorded with client.MtimeSet, and an inode that a
// rename replaced is reaped through client.Unlinked.
//
// Stateless I/O (io.go): protocols without open and close (NFSv3) read and
// write by inode; vfs keeps one client handle per inode, opened at the first
// use and released once idle (Options.IdleRelease).
//
// What still lives in internal/fuse and is not shared yet: the open-file
// table of FUSE handles, fileset routing (fill, complete before write,
// partial reads), read-only fileset and home-down handling, O_EXCL/O_TRUNC
// create, directory paging with stable offsets, xattrs, fallocate and
// O_TMPFILE (docs/design/2026-11-28-vfs-and-nfs.md).
package vfs
