// Package metawait makes a meta.API wait out outages of the meta service,
// as an NFS hard mount waits for its server: a call that finds the service
// unreachable (meta.ErrUnreachable) or loses its reply (meta.ErrReplyLost)
// is sent again, with a backoff from 50 ms to 1 s, until the service
// answers, Options.Timeout has passed since the first failure (then the call
// fails with the last error, which unwraps to EIO), the caller's context
// ends, or the caller is dying (Options.Interrupt: the request was
// interrupted and its process has SIGKILL pending; the call fails with
// EINTR). What the service answers, errors included, is returned as it is.
//
// Resent calls. A call that never reached the service is simply sent again.
// A call whose reply was lost may have been applied, which matters for the
// calls that are not idempotent. Before such a call is sent again, New's
// API looks whether it was applied (docs/design/2026-11-24-meta-outage.md):
//
//   - Create of a directory, symlink or special file, or with Excl: the name
//     exists and names an inode of the type, owner and permissions asked
//     for that nothing changed since (change counter 1): applied, and that
//     inode is the reply.
//   - Link: the new name names the inode: applied.
//   - Unlink, Rmdir: the name is gone, or (Unlink with reap) names another
//     inode: applied. Unlink's reply is then the reaped inode with no links,
//     or the zero Inode when the inode is unknown.
//   - Rename: the old name is gone (with RenameExchange: names another inode
//     than before the call): applied; the replaced inode is not known (the
//     zero Inode).
//   - SetXattr with XattrCreate: the attribute has the value; RemoveXattr:
//     the attribute is gone: applied.
//   - ReleaseOpen: taken as applied, never sent twice. A session counts its
//     opens of an inode, so a second release could drop another handle's
//     open and let an unlinked inode be deleted while it is still open.
//
// HoldOpen (and a Create with Open) whose reply was lost is sent again: if
// the first was applied, the session counts one open more and keeps the
// inode until the session ends (space kept longer, nothing deleted early).
// When the reply was lost because the meta process died, the count died
// with it, and the client announces its opens to its next session.
//
// Commit is sent again and its answer settled (commitAgain): applied the
// first time, it conflicts with itself (every block it names holds what it
// installed) and is answered as applied, with the inode as it is now. A
// conflict naming other content cannot be told from an applied commit
// another client overwrote since, which a redo would apply a second time
// after that client's write: the commit fails with meta.ErrMaybeApplied,
// as it does when given up on (timeout, cancel, interrupt) after a lost
// reply. Every other call is idempotent. Those are generated
// (zz_metawait_gen.go, by internal/meta/wrapgen: one call of around each),
// and so is any method added to meta.FS or meta.Cluster: a new call that is
// not safe to send twice must be written by hand in methods.go, with its
// check, which takes it out of the generated file.
//
// Calls the session machinery makes for itself (OpenSession, Callbacks,
// CloseSession) and WalkBlocks are not retried: their callers keep their own
// retries. Every call, retried or not, tells the API whether the service is
// reachable; a call under NoWait is sent once, and not at all while the
// latest call found the service unreachable, so that a reader may fall back
// on cached data at once. Options.OnBack is called when the service answers
// again after an outage.
//
// The clock is injected (Options.Clock), so that tests of the waits need no
// real time.
package metawait
