// Package fuse serves a Tessera file system to the Linux kernel through
// go-fuse's raw protocol API. It is a thin adapter over internal/vfs, the
// layer every front end shares: namespace requests, the open-file and
// open-directory tables (a FUSE file handle is vfs's handle number), reads
// and writes, fallocate, O_TMPFILE, O_EXCL/O_TRUNC creates, directory
// listings with stable offsets, xattrs and the fileset rules below are
// vfs's; this package turns kernel requests into vfs calls (with
// vfs.Cred.Checked: the kernel checked permissions) and vfs's answers into
// the kernel's, and keeps what only a kernel needs: its caching, its
// invalidations, interrupts. A FUSE node id is the Tessera inode number
// (the root is 1 on both sides), so the layer keeps no tree of its own.
//
// Kernel caching follows each regular file's consistency policy
// (client.CacheTTL, client.OpenMode; docs/design/2026-11-23-consistency.md):
// attributes are cached for the policy's TTL (0 for coherent and uncached
// policies, whose reads use direct I/O so that the client's coherent caches
// answer them); an open keeps the page cache (FOPEN_KEEP_CACHE) when the
// change counter is the one this client last saw, and otherwise also drops
// the kernel's cached attributes; O_RSYNC handles use direct I/O. Callbacks
// from the meta service (another client changed a file) reach the kernel as
// inode invalidations through vfs.Invalidations. Directories, symlinks and
// special files keep Options.EntryTimeout and Options.AttrTimeout.
//
// Opens are cluster state: OPEN, CREATE (meta.CreateReq.Open) and OPENDIR
// record the open with the meta service through the client, RELEASE and
// RELEASEDIR drop it, so a file or directory removed or renamed over on
// another mount (or this one) keeps answering reads, writes and fstat
// (nlink 0) until the last close.
//
// Direct I/O does not rule out MAP_SHARED: the mount asks for
// FUSE_DIRECT_IO_ALLOW_MMAP (Linux 6.6+), so a mapping of a direct-I/O file
// goes through the page cache, which the kernel writes back and drops
// around each direct write; read and write stay direct, and linearizable
// under posix (docs/design/2026-11-24-posix-mmap.md).
//
// Permissions are checked by the kernel (default_permissions) against the
// attributes the meta service keeps; new inodes are owned by the caller's
// uid and gid. Set-id bits are this layer's to clear (the mount takes
// HANDLE_KILLPRIV_V2, docs/design/2026-11-29-killpriv.md): a write, a
// truncate or an O_TRUNC open by a caller without CAP_FSETID, and any
// chown of a non-directory, clear S_ISUID, and S_ISGID of a
// group-executable file; the kernel flags those requests
// (WRITE_KILL_SUIDGID, FATTR_KILL_SUIDGID, OPEN_KILL_SUIDGID) instead of
// asking GETATTR before each chown and GETXATTR before each write. File locks (flock, fcntl) are kept by the kernel, so
// they hold between processes on this mount but not across mounts.
//
// Timestamps: every truncate (truncate(2), ftruncate, O_TRUNC of an existing
// file, also to the same size) sets mtime and ctime, as ext4 does; the
// kernel leaves that to the file system. An mtime set on an open file
// (futimens before close, as tar does) survives the close (client.MtimeSet).
//
// O_TMPFILE makes a nameless inode (meta.CreateReq.Tmpfile) that the last
// release reaps unless linkat named it. fallocate grows the file (mode 0),
// ignores KEEP_SIZE alone (no space is reserved), and writes zeros for
// PUNCH_HOLE|KEEP_SIZE and ZERO_RANGE (all-zero blocks become holes);
// COLLAPSE_RANGE and INSERT_RANGE get EOPNOTSUPP
// (docs/design/2026-11-24-tmpfile-fallocate.md).
//
// Read-only filesets: an open for writing or with O_TRUNC, a CREATE that
// opens an existing file for writing, and a truncate of an inode in a
// read-only fileset get EROFS before anything is fetched from home
// (vfs's readonly.go; the fileset's mode is read through the Gateway and
// kept 10 s); every other update is refused by the meta service, the authority
// (docs/design/2026-11-25-gateway-readonly.md).
//
// Home down (disconnected operation): a never-listed directory of an sw,
// iw or lu fileset whose listing fails serves its local entries, so
// updates in it work, and is listed when home returns; anything that
// needs home's bytes and cannot get them fails with EIO, logged with the
// fileset and its home (vfs's homedown.go;
// docs/design/2026-11-25-gateway-disconnected.md).
//
// Interrupts: every request passes the kernel's INTERRUPT on to the
// client's unbounded waits (killable) — for dirty budget and uploads, and
// for the meta service while it is unavailable (client.Config.MetaTimeout,
// metawait) — which end only when the caller has SIGKILL pending
// (signals.go): a caller that handles its signal is not disturbed, a dying
// one is not held in state D. ENOSPC is logged once per interval.
package fuse
