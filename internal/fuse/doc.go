// Package fuse serves a Tessera file system to the Linux kernel through
// go-fuse's raw protocol API. A FUSE node id is the Tessera inode number (the
// root is 1 on both sides), so the layer keeps no tree of its own: namespace
// requests go straight to the meta service, data requests to the client
// package, which owns buffering, caching and commits.
//
// Kernel caching. Entries and attributes are cached by the kernel for
// Options.EntryTimeout and Options.AttrTimeout. An open asks the kernel to keep
// its page cache (FOPEN_KEEP_CACHE) when the file's change counter is the one
// this client last saw, so hot re-reads are served from the page cache; other
// clients' changes are invisible to this mount until its caches time out (the
// coherent policies of DESIGN §4 replace that with callbacks).
//
// Permissions are checked by the kernel (default_permissions) against the
// attributes the meta service keeps; new inodes are owned by the caller's
// uid and gid. File locks (flock, fcntl) are kept by the kernel, so they hold
// between processes on this mount but not across mounts.
package fuse
