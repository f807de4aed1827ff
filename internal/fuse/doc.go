// Package fuse serves a Tessera file system to the Linux kernel through
// go-fuse's raw protocol API. A FUSE node id is the Tessera inode number (the
// root is 1 on both sides), so the layer keeps no tree of its own: namespace
// requests go straight to the meta service, data requests to the client
// package, which owns buffering, caching and commits.
//
// Kernel caching follows each regular file's consistency policy
// (client.CacheTTL, client.OpenMode; docs/design/2026-11-23-consistency.md):
// attributes are cached for the policy's TTL (0 for coherent and uncached
// policies, whose reads use direct I/O so that the client's coherent caches
// answer them); an open keeps the page cache (FOPEN_KEEP_CACHE) when the
// change counter is the one this client last saw, and otherwise also drops
// the kernel's cached attributes; O_RSYNC handles use direct I/O. Callbacks
// from the meta service (another client changed a file) reach the kernel as
// inode invalidations through an Invalidator. Directories, symlinks and
// special files keep Options.EntryTimeout and Options.AttrTimeout.
//
// Permissions are checked by the kernel (default_permissions) against the
// attributes the meta service keeps; new inodes are owned by the caller's
// uid and gid. File locks (flock, fcntl) are kept by the kernel, so they hold
// between processes on this mount but not across mounts.
//
// Interrupts: every request passes the kernel's INTERRUPT on to the
// client's unbounded waits (killable) — for dirty budget and uploads, and
// for the meta service while it is unavailable (client.Config.MetaTimeout,
// metawait) — which end only when the caller has SIGKILL pending
// (signals.go): a caller that handles its signal is not disturbed, a dying
// one is not held in state D. ENOSPC is logged once per interval.
package fuse
