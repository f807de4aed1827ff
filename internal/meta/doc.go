// Package meta is Tessera's metadata service: the namespace (inodes and
// directory entries), file recipes (block index -> block hash), extended
// attributes, usage counters and the block-server map, all kept in a
// transactional, ordered kv.Store.
//
// Contract. API (api.go) is what clients see; Service implements it over a
// kv.Store and the RPC client in metarpc implements it over the wire. Every
// method runs in a single kv transaction, so each operation is atomic and
// isolated, except the drops of recipe entries that reap and truncate do
// in segments of bounded transactions, invisible to readers (see Bounded
// transactions); a Service keeps no state the store does not hold except a batch
// of pre-allocated inode numbers, its sessions (below) and hints of which
// inode a name last named (hints.go: bounded, never trusted, only read
// ahead with the entry), so several Services may share one store.
// Errors are syscall.Errno sentinels (ErrNotFound, ErrExist, ...) wrapped
// with the operation's context: test them with errors.Is. A record that fails
// to decode is ErrCorrupt (which also matches ErrIO) and is never retried.
// Commit conflicts are *ConflictError (errors.Is(err, ErrConflict)). A
// remote API that cannot reach the service says so with ErrUnreachable (not
// applied) or ErrReplyLost (maybe applied), both matching ErrIO (outage.go);
// metawait waits such outages out.
//
// Semantics follow Linux: nlink counts (a directory has 2 plus one per
// subdirectory), ctime on every change, parent mtime/ctime on entry changes,
// setgid directories, renameat2 flags. A non-directory whose last link goes
// becomes an orphan: its inode and recipe stay (an open file can still be
// read and written) until it is reaped, and so does a removed directory
// some session has open (see Open files). An O_TMPFILE inode
// (CreateReq.Tmpfile) is born an orphan with no name; unlike an unlinked
// file, Link may name it. Inode numbers are never reused, so Gen is always
// 1. Permission checks are the kernel's (default_permissions).
//
// # Key schema
//
// All integers are big-endian so that keys sort numerically; ino and seg are
// 8 bytes, names are raw bytes (no terminator: the key ends with the name).
//
//	"i" ino              -> inode record
//	"d" parent name      -> dentry record: child ino and file type
//	"r" ino seg          -> recipe segment: blocks seg*SegmentBlocks ... of ino
//	"x" ino name         -> xattr record
//	"k" hash             -> composition of a composed block (compose.go)
//	"o" ino              -> orphan marker: nlink is 0, awaiting Reap (a file, or a removed directory held open)
//	"q" dir ino          -> the orphan ino's parent pointer names dir (links.go)
//	"p" ino dir          -> count of the non-directory ino's links in dir, kept while it has 2 or more (links.go)
//	"c" "n"              -> next free inode number (8 bytes)
//	"c" "f" shard        -> inodes in use whose ino%CounterShards == shard (8 bytes, wrapping)
//	"c" "b" shard        -> logical bytes of regular files in that shard (8 bytes, wrapping)
//	"s" id               -> block-server record
//	"m" "epoch"          -> block-server map epoch (8 bytes)
//	"m" "replicas"       -> the cluster's default replication factor (8 bytes, 1..MaxReplicas)
//	"m" "progress"       -> the mover's latest report
//	"m" "format"         -> key-schema version, FormatVersion (8 bytes; 4: inodes in layout 2; 5: "m" "quotas")
//	"m" "quotas"         -> version of the quota set, bumped by each change of a "Q" record (8 bytes; quota_cache.go)
//	"m" "sessions"       -> 1: the store has served client sessions (opens.go)
//	"m" "filesets"       -> 1: "g" records may exist; absent: none, no hook scans them (hookflags.go)
//	"h" hash             -> reference count of block hash (32 bytes)
//	"u" at hash          -> release: the block's count reached 0 at unix ns at (8)
//	"g" root             -> fileset record: the directory root caches a home store (fileset.go)
//	"G" root             -> the fileset's read counts from mounts: hit and miss bytes (8+8; filesetreads.go)
//	"Q" dir              -> directory quota's limits: max bytes, max inodes (8+8; quota.go)
//	"U" dir              -> directory quota's usage: bytes, inodes under dir (8+8)
//	"w" "f" root         -> a flush was requested at unix ns (8): entries queued before are due
//	"w" "n" root         -> the fileset's next write-back queue number (8 bytes; wbqueue*.go)
//	"w" "q" root seq     -> queued write-back operation (seq 8 bytes)
//	"w" "l" ino          -> root seq of the latest operation queued for ino
//	"w" "a" ino          -> ino's parent and name, for the queue's paths
//	"w" "t" ino          -> home's change token after the last apply of ino
//	"n" id               -> gateway process record, JSON (GatewaysAPI; gateways.go)
//	"M" meta             -> liveness of the Service meta (8-byte MetaID) of a shared store (shared.go)
//	"L" ino meta         -> Service meta may have sessions holding a lease on ino (remotecb.go)
//	"O" ino meta         -> sessions of Service meta hold ino open (sharedopens.go)
//	"C" meta req         -> callback request of a change for Service meta (req: random 8 bytes)
//	"t" ino              -> pending drop: ino's recipe entries from an index on are still to drop (segment.go)
//
// Counters are sharded by inode number so that creates and commits in
// different directories do not all conflict on one key; StatFS sums the
// shards. Inode numbers are handed out in batches (InoBatch) so allocation is
// not a hot key either; an unused batch is a harmless gap.
//
// # Records
//
// Every record value starts with a version byte (1 today; 2 for inodes); decoders reject
// unknown versions, short or over-long input, out-of-range lengths and
// trailing bytes with ErrCorrupt, and never panic. Strings and byte strings
// are a uvarint length then the bytes. Inode records are written in
// version 2: as version 1 below, but gen, mode, uid, gid, nlink, size,
// mtime, rdev, change, blocksize and parent (in that order) are minimal
// uvarints, and atime and ctime follow mtime as zigzag uvarints of
// their difference from it (atime-mtime, ctime-mtime); the rest (policy
// on) is version 1's. Version 1 inode records still decode. Version 1
// layouts:
//
//	inode:   1 | flags(1: bit0 HasInline, bit1 a replicas byte follows the
//	         inline data, bit2 some block was committed composed, bit3 a
//	         site spec follows the replicas byte, bit4 a gateway section
//	         follows, bit5 cached runs follow the gateway section) |
//	         gen 8 | mode 4 | uid 4 | gid 4 | nlink 4 | size 8 | atime 8 |
//	         mtime 8 | ctime 8 | rdev 4 | change 8 | blocksize 4 |
//	         parent 8 | policy str | target str | inline bytes (empty
//	         unless HasInline) | replicas 1 (with bit1) | sites str (with
//	         bit3, which needs bit1: a canonical per-site spec such as
//	         "a:1,b:1,c:1", at most MaxSitesLen bytes, whose copies sum to
//	         replicas) | gateway (with bit4) | cached runs (with bit5,
//	         which needs bit4: count 4 (1 to MaxCachedRanges) | (first
//	         block 8 | end block 8)* sorted, disjoint, not touching; only
//	         in state partial)
//	gateway section (an inode of a fileset): fileset root 8 | cache state 1
//	         (1 placeholder, 2 partial, 3 cached) | last validated 8 |
//	         home mtime 8 | home ctime 8 | home size 8 | home path str
//	         (at most 4096) | change token str (at most 1024)
//	fileset: 1 | home URL str | mode str (ro|sw|lu|iw) | validity lag ns 8 |
//	         sync lag ns 8 | prefetch str (none|range|whole) | conflicts str
//	         (cache-wins|home-wins|keep-both) | state str | created 8
//	dentry:  1 | ino 8 | type 1 (mode>>12: one of the S_IF* types)
//	segment: 1 | n * 32-byte hash, 1 <= n <= SegmentBlocks, entry i is block
//	         seg*SegmentBlocks+i, zero hash = hole, the last entry is never a
//	         hole (trailing holes are trimmed; an all-hole segment is deleted)
//	xattr:   1 | value (0..XattrValueMax bytes)
//	composition: 1 | len 4 | base 32 | n 1 (1..MaxPatches) |
//	         n * (hash 32 | off 4 | len 4)
//	orphan:  1 | unix ns when the last link went (8) | [linkable 1: an
//	         O_TMPFILE inode, which Link may name]
//	orphan by directory: 1
//	links:   1 | count 8 (at least 1)
//	ref:     1 | count 8 (at least 1: a count of 0 has no record)
//	release: 1
//	liveness: 1 | expires unix ns 8
//	lease record, open record: 1
//	callback request: 1 | ino 8 | from meta 8
//	server:  1 | addr str | dir str | host str | rack str | site str |
//	         state str | seen 8
//	progress: 1 | flags(1: bit0 Running, bit1 a per-site section follows
//	         the error, bit2 its sites carry bytes and since) | round 8 |
//	         at 8 | blocks 8 |
//	         under-replicated 8 | misplaced 8 | bytes to move 8 |
//	         bytes moved 8 | err str (at most 4096 bytes) |
//	         [n 1 (1..64) | n × (site str (1..255 bytes) | under-replicated 8 (> 0)
//	         [| bytes 8 | since 8 (unix ns, 0 unknown)] (with bit2))]
//	         (with bit1) |
//	         [lost 8 (> 0) | n 1 (<= 16) | n × (hash 32 | k 1 (<= 8) | k × ino 8)]
//	         (the lost section is absent when nothing is lost)
//	wb op:   1 | kind 1 (1 put .. 7 setattr) | flags 1 (bit0 New, bit1
//	         Permanent) | ino 8 | at 8 | ver 4 | path str | path2 str |
//	         mode 4 | mtime 8 | target str | owner str | until 8 |
//	         attempts 4 | err str
//	wb latest: 1 | root 8 | seq 8     wb name: 1 | parent 8 | name str
//	wb token: 1 | token bytes
//	pending drop: 1 | from 8 | flags 1 (bit0: the inode is being reaped)
//
// # Bounded transactions
//
// On etcd a transaction holds a bounded number of compares and writes
// (--max-txn-ops) and bytes (--max-request-bytes). Options.MaxTxnOps
// (DefaultMaxTxnOps, 4096) and MaxTxnBytes (8 MiB), on every engine,
// bound what meta puts in one, counted as etcdkv counts
// (segment.go; docs/design/2026-11-25-segments.md). What grows with a
// file is done in segments: Reap drops an orphan's recipe entries, with
// their reference counts and releases, a segment per transaction, the
// inode and its orphan marker deleted with the last; a truncate (SetAttr,
// Commit with SetSize) sets the size in its first transaction and drops
// the entries past it in further ones before it returns. A pending-drop
// record names what is left, so a crash between segments loses, leaks or
// double-frees nothing: every entry left is counted, and the next Reap,
// the next Commit or SetAttr of the size of the file (which finish a
// pending drop before they change anything), or the reaper's FinishDrops
// finishes it. An orphan whose reap has begun is as good as gone: HoldOpen
// and Link answer ErrNotFound. Entries past the end are never visible
// (GetRecipe stops at the size) and never resurface. A Commit takes at
// most MaxCommitBlocks changes and is refused with ErrTooBig, before the
// store sees it, when its transaction would exceed the bound; clients
// commit more in parts (internal/client). Unlink with reap deletes in its
// own transaction only a file whose entries fit; a larger one becomes an
// orphan and is reaped in segments at once.
//
// # Filesets
//
// A fileset (fileset.go, filesetsvc.go, FilesetAPI) is a directory whose
// subtree caches a remote home store; its inodes carry a gateway section
// naming the home object they cache, its attributes when last read and
// how much of it is cached: for a partly cached file, the runs of blocks
// fetched (GatewayInfo.Cached; blocks outside them have no data in the
// recipe and must be fetched before they are read). Gateways fill directories with placeholders
// (IngestDir: a name the directory has already wins, so a local create is
// never replaced) and record what they fetched with SetGateway, which
// fails with ErrConflict when the inode changed since the gateway read
// it, so that an ingest never clobbers a local update. EvictData
// (fileset_evict.go, EvictAPI) drops a file's cached data back to a
// placeholder and RemoveVanished (fileset_vanish.go) removes a name home
// no longer has; both refuse, with ErrDirty (EBUSY) checked inside their
// transaction, what the cache has changes of (queued write-back, made or
// changed locally). Deleting a fileset
// leaves its tree as ordinary files; sections naming a fileset that no
// longer exists are ignored.
//
// Gateway processes (gateways.go, GatewaysAPI) register and heartbeat as
// block servers do, with their address, site and counters; Gateways lists
// them, live when heard from within GatewayTTL by the service's clock.
//
// # Reference counts
//
// A block's "h" record counts the recipe entries, of every inode (orphans'
// included), that name it, plus the compositions ("k", compose.go) that
// name it as their base or a patch; holes and inline block-0 data name no
// block. A composed block whose count reaches 0 drops its composition and
// with it those references (Decompose drops them too, once the block is
// stored whole). Commits also release the uploads they superseded
// (CommitReq.Superseded) when no recipe names them. The
// transaction that adds or drops entries (Commit, a size-shrinking SetAttr,
// the Unlink or Reap that deletes an inode) changes the counts with them,
// so they never disagree with the recipes. When a count reaches 0 the same
// transaction deletes the record and adds a release "u" at hash, at being
// the transaction's time. The reclaimer (package reclaim) reads releases
// older than its safety window (Releases), removes the block from every
// block server when its count is still 0, with the release's time as the
// removal's cutoff (so a copy written or touched since is spared), and
// deletes the release (DropReleases); a block named again has a count again
// and its stale release is dropped without a removal. A block can have
// several releases (released, named again, released again): each spares
// the copies written after it. Format 1 stores had no counts: New builds
// them from the recipes once (the blocks they had already left are the
// full collection's, tessera gc).
//
// # Membership
//
// A block server's record holds its state: up while it heartbeats
// (RegisterServer, which stamps Seen with the service's clock), down once
// SweepServers finds it silent for the down-after period, draining when an
// operator asked (SetServerState). A heartbeat brings a down server back up
// and leaves a draining one draining. The epoch changes with every change of
// a member, a state, a label or the default replication factor, and not
// with a plain heartbeat, so that clients and the mover can tell cheaply
// whether placement changed.
//
// # Leases and sessions
//
// A client opens a session (OpenSession) and binds an API to it
// (SessionBinder.WithSession; over the wire the session id travels in every
// call). Lookup, GetAttr, GetRecipe, Create, Commit and SetAttr made through
// a bound API give the session a lease on the inode they return. After the
// kv transaction of a change commits (Commit, SetAttr, Link, Unlink, the
// inode a Rename replaced, SetXattr, RemoveXattr), every session other than
// the one that made it and holding a lease on the inode is queued a
// Callback: an update (the inode after, the changed recipe entries, whether
// the size was set exactly) when it is the only such holder, else an
// invalidation, which ends that holder's lease (CAPFS 3.5). Xattr changes,
// and commits of more than 4096 blocks, are always invalidations. A client
// fetches its callbacks with Callbacks, a long poll that also acknowledges
// the ones it has applied and renews the session. A read that races with a
// change (the change is called back between the read's transaction and the
// grant) earns the reader an invalidation at once, so no holder keeps data
// older than its lease says; Lookup, GetAttr and GetRecipe then read again
// (nobody waits for that invalidation, and the change may have returned
// already), so what they return under a lease is never older than a change
// that ended before the lease was granted.
//
// CommitReq.Sync and SetAttrReq.Sync make the call return only once every
// holder it called back has acknowledged, or its session has expired;
// without Sync the callbacks are queued and the call returns at once. A
// session expires SessionTTL (default 5 s) after its latest poll, dropping
// its leases and releasing any Sync waiter; a session caps its leases at
// MaxLeases (default 65,536, about 150 bytes each: 10 MiB a session),
// dropping the oldest with an invalidation, and the leases on an inode that
// lost its last name go when it does, but for its openers'. All of this is soft
// state in the Service's memory: a restarted service, or another Service
// sharing the store, knows no session, and its clients get ErrSessionExpired
// (they open a new session and revalidate what they cached). Expiry and long
// polls read the injected clock (Options.Now, Options.After).
//
// Several Services may share one store (Options.Shared: meta processes over
// etcd; docs/design/2026-11-24-multi-meta.md). Each then records in the
// store, once per inode, that its sessions may lease the inode ("L"), and
// grants no lease on an inode before that record is written. A change
// through one Service writes, in its own transaction, a callback request
// ("C") for each other live Service with such a record; that Service watches
// its requests (kv.Watcher), calls them back to its sessions as
// invalidations, and deletes each request once they acknowledged or
// expired. It keeps its lease record after a callback (the sessions it
// invalidated tend to read again) and drops a record once a whole tidying
// round (every third of the session TTL) found it unleased and unused, so
// a read between its record check and its grant keeps its record. A Sync
// change also waits for those deletions, or for the
// holder's liveness record ("M", renewed every third of the session TTL
// by ServeShared) to lapse, so Sync means the same across Services. A
// Service that cannot renew its liveness ends its sessions. Callbacks
// among the sessions of one Service keep the in-memory path above.
//
// # Open files
//
// An inode open on any client stays while it is open, whatever its names
// (POSIX; what NFS's silly rename and CephFS's capabilities give). Opens are
// cluster state held in the sessions: a client records each open with
// HoldOpen (or CreateReq.Open, for open with O_CREAT), which returns the
// inode as GetAttr does, and each close with ReleaseOpen; the service
// counts them per session and inode. An orphan, or a removed directory, is
// deleted only when no live session has it open: by Unlink in the same
// transaction (when the caller says it has no handle open, reap = the
// inode), by Rmdir or Rename at once (a directory held open becomes an
// orphan instead: Nlink 0, it answers GetAttr, lists as empty and takes no
// entries), by the ReleaseOpen that drops the last open of an orphan, by
// Reap, or by the reaper (ReapLoop, run by the meta role: every session TTL,
// and when a session that held an orphan ends) once the holders' sessions
// expired or closed. A hard link is not an orphan: removing one of its
// names deletes nothing. Deleting an inode drops its blocks' reference
// counts, so the reclaimer removes its blocks after its window; until then
// WalkBlocks, fsck and gc count the blocks of held orphans as live. A
// delete claims its inode first (startReap): a HoldOpen racing with it
// waits, then finds the inode gone, so a client never holds a deleted
// inode.
//
// Like leases, opens are soft state of the Service: a restarted service
// knows none. In a shared store a Service also keeps an open record ("O")
// per inode its sessions hold open, written in the transaction that reads
// the inode for the open (its compares make that read current at the
// commit, so it may come from the nearest store replica: one majority
// round per open), and every delete reads them in its transaction: an orphan held
// open through one Service is not deleted through another. The last
// release of an inode does not wait for its record's deletion: a drainer
// deletes the released records in batches, one transaction per batch,
// reaping what was orphaned through another Service meanwhile
// (opendrops.go). The records of
// a Service whose liveness lapsed hold for OrphanGrace more, while its
// clients fail over and re-announce their opens elsewhere; then the
// reaper's leader deletes them with the rest of its records (CleanupDead).
// A caller that allows lag (AllowSerializable) is served without its lease
// or open record when the store refuses the record (a site cut off from
// the majority; cutoff.go): the read unleased, the open held in the
// session only, if the inode's policy allows lag. Clients learn of the restart when their next poll gets
// ErrSessionExpired; they open a new session and re-announce every open
// they hold (HoldOpen again). So that they can, a Service started on a
// store that has served sessions before ("m" "sessions") deletes no orphan,
// and Unlink deletes nothing, for Options.OrphanGrace (twice the session
// TTL by default), as NFSv4's grace period. A client away longer than that,
// or whose session expired (it did not poll within the TTL), has lost its
// opens: an orphan only it held may be gone, and its handles on it get
// ErrNotFound. A client without a session holds nothing and keeps orphans
// alive only by passing reap 0 to Unlink and reaping at its last close; the
// reaper does not know about it. Orphans made through another Service
// sharing the store are reaped by whichever reaper finds them unheld
// anywhere; over a shared store the meta role runs the reaper's sweeps, the
// server sweeps, the mover, the reclaimer and the collector on elected
// leaders only (Elected).
//
// # Mutation pipeline
//
// Every change runs in update (pipeline.go): the operation records in its
// transaction's change set what it changed (edits: create, ingest, link,
// remove, rename, delete, attr, content, xattr, fileset), each edit runs
// the in-transaction stage of every registered hook as it is recorded (an
// error aborts the change), and after the commit the post-commit stage
// runs on the whole set. New registers the write-back hook (below), the
// usage counters (usage.go), directory quotas (quota.go: usage per quota
// directory in the same transaction, EDQUOT past a limit) and the telling
// of lease holders (notice.go: callback requests to other Services in the
// transaction, notices to this Service's sessions after it). An operation names no hook; a hook is one
// registration (docs/design/2026-11-29-meta-pipeline.md).
//
// # Write-back queue
//
// Every change under a fileset ("g" record; issue 14) (Create, Link, Unlink, Rmdir, Rename, Commit,
// SetAttr, the xattr calls) runs the write-back hook (writebackHook,
// wbqueue.go) inside its own transaction: a read-only fileset refuses it (EROFS; the xattr calls
// before they look at the attribute, so EROFS wins over ENODATA and
// EEXIST, as on a read-only mount), an lu one keeps it
// local (nothing queued), an sw or iw one appends the operation, with its paths relative to the fileset root, to
// the fileset's queue ("w" "q") in that transaction. Which fileset an
// inode is in comes from the parent pointers; with no fileset the hook
// costs one scan of the empty "g" range. Writes to a file coalesce
// into its latest queued Put, and removing a file whose creation is still
// queued and unclaimed cancels both. Hard links, exchanging renames and
// renames across a fileset's border are refused (ENOTSUP, EXDEV): no home
// could carry them. The gateway's own changes (WithoutWriteback, or a
// caller whose role has CacheHome) are home's content: never queued, and
// allowed in read-only filesets; so is a SetAttr of only the access time. ClaimWriteback hands gateways, under a lease, the
// operations no earlier queued one overlaps (Overlaps); WritebackDone,
// WritebackFailed and WritebackStats complete the applier's side
// (package gateway/writeback, docs/design/2026-11-24-writeback.md).
//
// # Durability
//
// A change is acknowledged once the store has it in a form that survives a
// crash of the meta service's process. When the store defers its fsyncs
// (kv.Syncer: pebblekv with WALSyncEvery, as the meta role runs it) it may
// not yet survive a crash of the machine: Sync makes every change
// acknowledged before it durable, and the store syncs by itself at least
// every WALSyncEvery. Clients call Sync for fsync(2), fsyncdir and O_SYNC
// writes (docs/design/2026-11-23-small-files.md).
//
// The parent field of an inode record is the containing directory for
// directories (the root's is itself); rename walks it up to refuse moving a
// directory into its own subtree. For everything else it is a directory
// holding a link to the inode (for an orphan, its last link's), and the
// "p" and "q" records complete it for hard links and orphans (subtree.go,
// links.go); Within walks them to tell whether an inode lies under a
// directory (subtree confinement, package meta/authz). Key-schema version
// 3 added them (0 in older stores' non-directories: New fills them in). When block 0 of a
// file is inline its recipe entry is a hole and its content lives in the
// inode record.
package meta
