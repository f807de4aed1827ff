// Package client is Tessera's data path on the client side: it turns reads and
// writes at byte offsets of a file into block fetches and block uploads, and
// commits recipes to the meta service. The FUSE layer (internal/fuse) and
// tools use it; namespace operations go to meta.API directly.
//
// Write path. Writes land in a per-file buffer of dirty blocks. A block whose
// last byte is written is hashed and uploaded at once, in the background, to
// the block servers placement allows for its hash (R of its R+1 candidates:
// those that hold it already, so that identical content is stored once, then
// the least loaded by this client), while the application keeps writing.
// A file with a per-site replication spec (Attr.Sites, "a:1,b:1,c:1") is
// uploaded to every named site at once, each site's copies on its own
// servers; an upload is done once a majority of the sites hold a majority
// of their copies (for a number: a majority of the copies), and fails at
// once when that is out of reach; the other copies go on in the background
// and fsync waits for them (router.go, docs/replication.md).
// Commit (on fsync, flush/close and truncate, and in the background for data
// left uncommitted longer than Config.MaxUncommitted) waits for the uploads
// and sends the meta service one commit naming, for every changed block, the
// hash it was based on and the new hash (DESIGN §2.3); more blocks than one
// commit takes (meta.MaxCommitBlocks, or the service's transaction bound)
// go in parts in ascending block order, acknowledged only with the last
// (commitparts.go). Each changed block
// carries the byte ranges this client wrote since the block was last
// committed. When another client committed one of the blocks meanwhile, the
// commit conflicts and the client redoes it: it reads the current content,
// copies its own ranges over it, uploads the result and commits again with
// the current hashes — at most 20 attempts with a short jittered backoff,
// then the commit fails with EIO (and one log line) and the data stays
// buffered for the next try. Both writers' bytes survive; where they overlap
// one writer's write wins whole. Writes commit as the file size the end of
// this client's writes (the meta service keeps the larger); a truncate sets
// its size exactly and conflicts with writes into the block it cuts. A
// file whose policy forces commits (policy.ConflictForce) or set forced
// (Handle.SetForced) commits without the comparison: the last writer wins
// whole blocks. A block that is all zeros becomes a hole; a file of at most
// meta.InlineMax bytes is committed inline and never reaches a block server.
// A block changed in a few small ranges is uploaded as those ranges (patch
// blocks) and committed with a composition over the committed block, then
// stored whole once it rests (compose.go).
// Uploads older than Config.TouchAfter are touched on the block servers
// before a commit names them, so the collector spares them; if they are gone
// from every server, the commit fails with EIO and the file stays as last
// committed (touch.go).
// Dirty memory is bounded for the whole client (Config.DirtyBytes): a writer
// that would exceed it waits, and the client uploads dirty blocks of open
// files to make room, so memory does not grow with the size or number of
// files written. A failed upload makes the file's next write fail (ENOSPC
// for a full disk, EIO otherwise) and is retried with a backoff; nothing is
// committed around it; the waits for budget and uploads end with EINTR when
// the caller is dying (interrupt.go). The caches are sized from the
// machine's memory and given back when the client is idle (memory.go).
//
// Read path. A read is served from the file's own dirty buffers, then by
// block hash from the memory cache, the local disk cache and the block
// servers (copies on this host first, then the block's R+1 placement
// candidates, then the others; a client with Config.Site asks its own
// site's servers first, then the other sites nearest first by measured
// answer time: sites.go). The meta reads of a read under a policy that
// allows it (session, nfs, relaxed; not O_RSYNC) are marked
// meta.AllowSerializable, and so are the FUSE layer's namespace reads
// (Client.Meta) under such a mount policy. Every block fetched from outside the process
// is verified against its hash; a corrupt copy is an error (EIO to the
// application) and a log line naming the block and the server, never wrong
// bytes. A block with a copy on this host (a co-located server's file, the
// disk cache) whose segment sums the client learned from verified bytes is
// read in place: just the 4 KiB segments a read needs, from the file kept
// open, into the caller's buffer, checked against the sums (segsums.go,
// localfiles.go); its read-ahead asks the kernel to cache the file.
// Sequential reads trigger read-ahead of the next blocks, deeper with
// more servers and bounded by the memory cache; a fetch a reader waits for
// goes before read-ahead on its server's lane (fetchSlots). A block fetched
// into the process is read into the memory of a block the memory cache
// evicted once no reader holds it (bufpool.go). Caches are keyed
// by hash, so they never need invalidation. With Config.CacheTier, blocks and
// stat results are also looked up in a memcached pool (tierAPI for stats,
// trusted only for the file policy's attribute TTL). Xattr reads of an open
// file (the kernel asks for security.capability before every write) are
// answered from the client for the same TTL (xattr.go).
//
// Callbacks. With Config.Sessions and a meta API that implements
// meta.SessionBinder, New opens a meta session and makes the client's meta
// calls (and the FUSE layer's, through Meta) under it, so the meta service
// grants it leases on what it reads and calls back when another client
// changes those inodes (DESIGN §2.4). One goroutine, stopped by Close (which
// then closes the session), long-polls meta.API.Callbacks. Each callback is
// queued on the open file it names and applied at once unless the file's
// lock is busy, in which case the lock's next taker applies it before it
// uses the cached size or recipe: the poll loop never waits for a file lock,
// whose holder may be in a Sync commit waiting for this very client. A
// callback is acknowledged (by the next poll) only once applied or queued
// that way. An update is installed (new hashes, size, change counter) when
// the file has no uncommitted change and it is the next change after the
// one the file has; anything else acts as an invalidation: the recipe is
// dropped and the attributes read again before the next use, or, when the
// file has uncommitted changes, once they are committed (the commit still
// compares against the hashes they were based on). Attributes a call
// brings back (an open's HoldOpen, a create's reply, a revalidation) are
// adopted as fresh only when no callback of the inode arrived while the
// call was under way (the client's callback log, cblog.go): the reply may
// have been read before a change whose invalidation was applied and
// acknowledged first, and whose writer has returned; otherwise the file
// stays invalidated. Either way the kernel may no longer keep its pages on
// the next open, and Config.OnInvalidate is
// called in the background. When the session expired the client opens a new
// one (callbacks.reopen, the one re-open path, which then runs the hooks
// registered with onSessionReopened) and marks every open file unleased:
// its cached attributes and recipe are revalidated before a use that needs
// them. When the meta service is unreachable the poll loop retries with
// backoff (one log line per outage), marks every open file unleased at once
// (a restarted service knows none of the session's leases) and tells the
// kernel to drop its caches once two thirds of the TTL passed without a
// poll, since writers stop waiting for it when its session expires; it polls
// at once when a call is answered again.
//
// Outages (outage.go). Every meta call waits for an unavailable meta service
// (metawait) for Config.MetaTimeout, then fails with EIO; a dying caller
// ends the wait with EINTR. Meanwhile files under a policy with a timed or
// write-once cache go on from what the client cached (recipe, blocks,
// attributes of open files, xattr answers); coherent and uncached policies
// wait. Uncommitted writes are committed once the service is back.
//
// Commits of files under a
// coherent policy are Sync (with Config.SyncCommits, every commit and
// setattr is): the meta service invalidates the other holders before it
// makes the change, so the next read anywhere sees it.
//
// Opens. Every open handle, and every directory the FUSE layer has open,
// is recorded with the meta service (meta.API.HoldOpen; a create made with
// meta.CreateReq.Open records its own), and released when the handle goes
// (ReleaseOpen), so that a file or directory removed on another mount stays
// while it is open here (holds.go). The opens live in the session: after
// opening a new session the poll loop announces them all again before
// anything else, within the meta service's restart grace. Unlink still says
// whether this client has a handle open (meta.API.Unlink's reap), for
// clients without a session.
//
// Policies. Every handle operation runs between the Pre and Post hooks of
// the file's consistency policy (policy.Policy; the inode's own, else
// Config.Policy, else policy.Default): they commit after each write, refuse
// writes to committed write-once files, revalidate before synchronized
// reads. PolicyFor, CacheTTL and OpenMode tell the FUSE layer how long the
// kernel may cache attributes and pages. docs/design/2026-11-23-consistency.md
// has the whole picture.
//
// Locking. Client.mu guards the table of open files; file.mu guards one file's
// state; file.visible orders a commit-per-write write against linearizable
// reads of the file in this client. Order: file.visible, then file.mu, then
// Client.mu, which is a leaf (it is never held while a file's lock is taken). No file.mu is held
// while waiting for the dirty-memory budget, so the flusher can take any.
package client
