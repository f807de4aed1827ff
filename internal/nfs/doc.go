// Package nfs serves a Tessera file system over NFSv3 (with its MOUNT
// protocol on the same port) through github.com/willscott/go-nfs, over
// internal/vfs: the permission rules, errnos and client conventions are
// vfs's, the same as FUSE's. `tessera nfs` and `tessera up --nfs` run it
// (internal/up.StartNFS).
//
// Each connection gets its own go-nfs server behind a gate (gate.go),
// which hands go-nfs one RPC record at a time and the next only once the
// reply to it was written: the AUTH_SYS credentials of the call being
// served are known to the file system go-nfs calls (go-nfs passes them
// on to nothing), a record is bounded (1 MiB of data plus 64 KiB) and its
// variable-length fields are checked (xdrcheck.go) before go-nfs's decoder
// allocates them, and a connection has one call in flight; the bytes of
// all calls in flight are bounded (Config.MaxInFlight, budget.go).
// Connections are capped in all and per client address; --allow refuses other clients
// at connect. Credentials are squashed as Config.Squash says (root to
// nobody by default); AUTH_NONE is nobody.
//
// File handles (handle.go) are the cluster id, the export's root, the
// inode and its generation: no table is kept, so a handle is valid after
// a restart and on every server of the cluster with the same export; the
// handle of a removed inode is NFS3ERR_STALE. A handle is not a
// capability: like knfsd's no_subtree_check, a client that forges the
// handle of an inode outside the export reaches it (with its own
// credentials still checked).
//
// Writes: the gate answers WRITE and COMMIT itself (write.go), not go-nfs
// (which answers every WRITE FILE_SYNC and makes COMMIT a no-op): an
// UNSTABLE write is buffered (vfs.FS.WriteAt without stable) and made
// durable by COMMIT (vfs.FS.Commit); FILE_SYNC and DATA_SYNC commit before
// the reply. Both carry the write verifier, which changes at every start,
// so a client resends the UNSTABLE writes a restart may have lost. Reads
// and writes go through one shared client handle per inode, released (and
// so committed) when idle (vfs's stateless I/O).
//
// What go-nfs decides and this package cannot change: ACCESS grants what
// is asked (the operations themselves are checked), a failed LOOKUP is
// NFS3ERR_NOENT (also when search permission is missing), a failed READ
// other than a refused open is NFS3ERR_IO, LOOKUP ".." of a directory
// reached through a handle answers the export's root, attributes carry
// one time (the mtime) for atime, mtime and ctime, and set-id bits are
// not shown in modes. Locks (NLM) are not served.
package nfs
