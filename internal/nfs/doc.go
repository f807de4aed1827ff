// Package nfs serves a Tessera file system over NFSv3 (with its MOUNT
// protocol on the same port) through github.com/willscott/go-nfs, over
// internal/vfs: the permission rules, errnos and client conventions are
// vfs's, the same as FUSE's. `tessera nfs` and `tessera up --nfs` run it
// (internal/up.StartNFS).
//
// Each connection gets its own go-nfs server behind a gate (gate.go),
// which reads each RPC record itself: a record is bounded (1 MiB of data
// plus 64 KiB) and its variable-length fields are checked (xdrcheck.go)
// before go-nfs's decoder allocates them, and the bytes of all calls in
// flight are bounded (Config.MaxInFlight, budget.go). READ, WRITE,
// COMMIT, GETATTR, LOOKUP (but of "." and ".."), ACCESS, REMOVE, CREATE,
// MKDIR and SETATTR the gate serves itself, by inode, up to 16 at once
// per connection (dispatch.go): calls on overlapping bytes of one file
// keep their order unless both read, WRITEs of one file keep theirs, a
// CREATE or MKDIR waits for the calls before it on its directory, a
// REMOVE is ordered against every other call but REMOVEs in other
// directories; a namespace
// call that comes alone is served by the reader. Every other call it
// hands to go-nfs one at a time, once the gate's own calls before it are
// done, and reads the next record only when go-nfs has replied: so the
// AUTH_SYS credentials of the call go-nfs serves are known to the file
// system go-nfs calls (go-nfs passes them on to nothing).
//
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
// The handle checks of the gate's calls take the inode's attributes from
// vfs's attribute cache (vfs.Options.AttrCache, which the server's FS must
// have: up.StartNFS turns it on), trusted as long as a FUSE mount's kernel
// may trust them (a regular file's only while this server hears of other
// clients' changes of it: open here, or read under the session lease its
// client still holds, whose callbacks drop it) and dropped by every change
// this server makes; a
// COMMIT's from the meta service (lookup.go). ACCESS answers the caller's
// permissions, and no change on a read-only server (--read-only or an
// identity that may only read, which refuses every change with
// NFS3ERR_ROFS) or in a read-only fileset. CREATE (GUARDED or UNCHECKED;
// EXCLUSIVE is NFS3ERR_NOTSUPP) and MKDIR are one meta call each
// (create.go).
//
// Reads and writes: the gate answers READ, WRITE and COMMIT itself
// (read.go, write.go), not go-nfs (which opens and stats the file by path
// for every READ and WRITE, answers every WRITE FILE_SYNC and makes COMMIT
// a no-op): the inode's attributes check the handle and the caller's
// permission (vfs.FS.ReadAtInode, WriteAtInode); an UNSTABLE write is buffered
// (pieces that come after a gap in their block held by vfs until the gap
// is filled, so that a block is uploaded once, whole: vfs/reorder.go) and
// made durable by COMMIT (vfs.FS.Commit); FILE_SYNC and DATA_SYNC commit
// before the reply. Both carry the write verifier, which changes at every
// start, so a client resends the UNSTABLE writes a restart may have lost.
// Reads and writes go through one shared client handle per inode, released
// (and so committed) when idle (vfs's stateless I/O); the block client's
// read-ahead follows a sequential reader through it.
//
// go-nfs's other calls resolve paths from what the call met already (the
// handle's directory), and vfs's permission checks take those attributes
// (vfs.WithFresh) instead of asking the meta service again.
//
// What go-nfs decides and this package cannot change: LOOKUP ".." of a directory
// reached through a handle answers the export's root, attributes carry
// one time (the mtime) for atime, mtime and ctime, and set-id bits are
// not shown in modes. Locks (NLM) are not served.
package nfs
