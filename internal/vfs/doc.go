// Package vfs is the one file-system layer every Tessera front end shares
// (issue 24): the FUSE mount (internal/fuse), the NFS server
// (internal/nfs) and the gateway's tessera:// home (internal/gateway/home)
// call it by inode, with the caller's credentials on every call, and it
// speaks to the meta service and the client package.
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
// Open files and directories (files.go, dirs.go): OpenFile, CreateOpen
// (O_EXCL; O_TRUNC of an existing file sets its mtime and ctime) and
// Tmpfile (O_TMPFILE: a nameless inode reaped at its last release) return
// a handle number; File and Dir find the handle, whose Read, Write, Flush,
// Fsync and Release go to the client, and Allocate is fallocate(2). An
// open is recorded with the meta service, so a file or directory removed
// while open keeps answering until its release. A directory's listing
// offsets are positions in what the handle has listed, stable while it is
// open (a listing resumed at any offset handed out goes on from there).
//
// Filesets (fileset.go, readonly.go, homedown.go, filesetreads.go): with
// Options.Gateway, an inode of a fileset is filled before it is served
// (revalidated once its validity lag has passed, a directory listed at
// home); a read of a file not cached whole fetches the blocks it needs
// first; an open that may write, a truncate and an O_TRUNC create
// complete a partly cached file first and are refused with EROFS in a
// read-only fileset; with home down a never-listed directory of a fileset
// taking local updates serves its local entries, and what needs home's
// bytes is EIO. Options.ReadOnly (an identity that may only read) refuses
// opens that may write and creates with EROFS.
//
// Extended attributes (xattr.go) follow Linux's namespace rules for
// callers not Checked; POSIX ACL names are not kept.
//
// Stateless I/O (io.go): protocols without open and close (NFSv3) read and
// write by inode; vfs keeps one client handle per inode, opened at the first
// use and released once idle (Options.IdleRelease). It follows the
// fileset rules as handles do (filesetio.go). Unstable writes that come
// out of offset order are put back in order per block (reorder.go: at
// most 8 MiB held per file, passed on before a read, a stable write, a
// commit, a SetAttr or the release; Overlay counts them in the size), so
// that the client uploads each block once, whole.
//
// Invalidations (invalidate.go) fans a client's invalidations out to the
// front ends that keep caches of their own (a mount's kernel).
//
// Attribute cache (attrcache.go, Options.AttrCache): for a front end with
// no cache of its own in front of vfs (NFS), GetAttrCached answers from
// the attributes fetched while a FUSE mount's kernel could trust them
// (the policy's CacheTTL for regular files, and only while callbacks tell
// of their changes: open in the shared handles, or read under the
// client's unbroken session lease, client.LeaseMark; Options.AttrTTL for
// the rest); every change made through the FS drops what it changed, and
// Invalidate (client.Config.OnCallback: before the callback is
// acknowledged) what another client changed. Off, GetAttrCached is GetAttr.
//
// Paths (paths.go): Resolve walks a path from the root with the caller's
// permissions; WriteFileAtomic writes a whole file under a temporary name
// and renames it into place.
package vfs
