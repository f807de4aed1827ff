// Package etcdkv is a kv.Store over a real etcd v3 cluster, shared by any
// number of meta processes (issue 13). It is also a kv.Watcher, a
// kv.Elector and a kv.Members, and honours kv.WithConsistency.
//
// Keys. The store owns the etcd keys under one prefix P (the path of the
// etcd:// URL, with a trailing slash; "/tessera/" when the URL has none): a
// key K of the store is the etcd key P+"k/"+K, and election E lives under
// P+"e/"+E. Two stores with different prefixes share a cluster without
// seeing each other.
//
// Views. A View reads one snapshot: its first read fixes the etcd revision
// it returned, every later read asks for that revision. The first read is
// linearizable (a quorum read) unless the context asks for
// kv.Serializable: then the member the client talks to answers alone and
// may lag. Later reads, naming a revision the cluster has committed, are
// answered by whichever member the client picks (it spreads its requests
// over them), alone, either way. One that has not applied the revision
// yet refuses ("future revision"): the read is asked again linearizably
// (the member that answers first catches up with the leader's commit
// index), and when that finds no leader, serializably again (another
// member may have the revision), with backoff on Options.Clock, until
// Options.MajorityWait has passed; then the read fails with
// ErrNoMajority. A member's lag never reaches the caller as an error
// (lag.go; docs/design/2026-11-28-etcd-reads.md). When a read finds the
// snapshot's revision compacted away (etcd compacts periodically, see
// ServerFlags), fn runs again on a fresh snapshot, up to MaxAttempts
// times, as kv.Store's contract allows. Scan pages through a range
// (ScanPage keys per request) at the snapshot's revision instead of
// asking for it in one reply.
//
// Batched reads (getmany.go, prefetch.go). GetMany (kv.MultiGetter) sends
// the keys a transaction has not read yet as one read-only etcd Txn of
// Gets at the snapshot's revision, with readAt's fallback when a member
// lags; Prefetch (kv.Prefetcher) does the same for keys and small ranges
// (a range as one Get of at most ScanPage keys) and answers the
// transaction's later Gets, and Scans inside a range it read whole, from
// what it read. Keys read so are recorded for the commit's compares as
// Get records them; a Scan answered from a prefetched range records the
// keys it returns and its range, as a Scan that went to etcd does.
// PresumeAbsent (kv.Presumer) reads nothing in the first run of an
// Update's fn that has written: the key is recorded as read absent, and
// the commit's compare (ModRevision 0) checks it; a wrong guess is a
// conflict, and fn runs again, reading (txn.go). Requests counts the
// unary requests sent (requests.go): an operation's round trips.
//
// Maintenance (maintain.go; kv.Maintainer). Maintain, run by the meta
// role's leader on a schedule, compacts the history to the newest
// revision an earlier round noted at least Retain ago and defragments the
// members one at a time; its state is one record at Prefix+"maint",
// outside the store's keys, which Maintenance reads. Members report each
// member's db size and in-use size.
//
// Updates are optimistic. Reads go to etcd as in a View (linearizable,
// unless Options.LocalUpdateReads, below) and are recorded: each key read with the ModRevision it had (0
// when absent), each scanned range with the extent actually scanned.
// Writes are buffered, and Get and Scan merge the buffer over the
// snapshot, so a transaction reads its own writes. At commit the buffer is
// sent as one etcd Txn whose If holds one compare per key read (ModRevision
// unchanged) and one range compare per scanned range (every key in it has
// ModRevision <= the snapshot revision, which catches keys created in a
// scanned range; keys deleted from it are caught by their own compare).
// When the If fails, or a read found the snapshot compacted away, fn runs
// again from a fresh snapshot, after a short
// randomized backoff, up to MaxAttempts times; then Update returns
// kv.ErrConflict. An Update that only read commits nothing.
//
// With Options.LocalUpdateReads (URL parameter update-reads=local), or for
// one Update whose context asks for kv.Serializable, an
// Update's first read is answered by the member alone, saving the quorum
// round trip before fn runs: a snapshot that lags is caught by the
// commit's compares like any conflict. An Update that only read, or whose
// fn failed, has nothing that compares at commit: it sends its compares
// with a linearizable Get as a read-only Txn (without the Get etcd would
// answer it at the member, which may lag) and, when they fail, runs fn
// again. After a conflict fn reads at the leader.
//
// Read cache (readcache.go; Options.ReadCache, on by default). The first
// run of an Update's fn reads keys, and small ranges a Prefetch read
// whole, from what this Store last read or committed of them, with their
// ModRevision (a range: the revision it was read at), instead of etcd.
// They are compared at commit as any read; a stale one is a conflict,
// after which fn reads etcd and the entries it used are dropped. An
// Update that only read, or whose fn failed, after a cached read checks
// its reads as with LocalUpdateReads. Views never read from the cache.
// docs/design/2026-11-29-etcd-read-cache.md.
//
// Group commit (on unless Options.NoBatch, URL parameter batch=0). An
// Update whose fn has run queues its transaction for a committer that has
// at most Options.InFlight Txns in flight (default 1; an etcd:// URL's batch=N, 8 without it); the
// Updates queued meanwhile go together in the next one (no timer: they
// gather while the others travel), oldest first, as many as fit in etcd's
// limits and are independent of each other and of the batches in flight:
// no key written by two of them, none written by one that another read or
// that lies in a range another scanned. The merged Txn
// compares every member's reads and applies every member's writes, which
// is equivalent to running them one after the other (in any order). When
// its If fails, each member commits alone with its own compares (those
// that pass commit; a stale one runs fn again); after a transport error
// each member finds out its own outcome (below). A queued Update that read what a committed
// batch wrote, from an older revision, runs fn again without a Txn. An
// Update whose context ends while it is queued is withdrawn (nothing
// written); one whose context ends while its Txn is in flight gets
// "outcome unknown". See docs/design/2026-11-25-etcd-group-commit.md.
//
// Limits. etcd refuses a Txn with more than --max-txn-ops compares or
// operations, or bigger than --max-request-bytes. Update checks both
// before it sends (Options.MaxTxnOps, Options.MaxRequestBytes, which must
// not exceed the server's flags) and fails with ErrTooLarge, naming the
// limit and the transaction's size; nothing of it is written. The scripts
// start etcd with ServerFlags (16384 operations, 32 MiB), and
// Options' defaults match them.
//
// Every linearizable read and every commit asks for a leader
// (WithRequireLeader): a member cut off from the majority refuses at once,
// before proposing anything, instead of letting the request hang. Update
// then waits for a leader, retrying, up to Options.MajorityWait (30s),
// and fails with ErrNoMajority: nothing of it was written. It does the
// same when fn failed on a read that etcd refused for a passing reason (a
// leader election, a timeout, an unreachable member): nothing was
// written yet, so fn may run again. A linearizable
// View fails at once with etcd's "no leader"; a serializable View is still
// answered by the member alone.
//
// Lost commits (resolve.go). When a commit's Txn fails in transport
// (etcd lost its leader, the connection broke with the Txn in flight),
// etcd may have applied it. A transaction that writes a key it read
// present (its fence) applies at most once however often it is sent: its
// compare on that key's ModRevision fails for good once it applied.
// Update sends it again, with backoff on Options.Clock, until etcd
// answers or Options.MajorityWait has passed: Succeeded means applied
// once; failed compares mean applied exactly when the first change of
// the fence after the snapshot is a revision that holds every write of
// the transaction; otherwise the fence is rewritten as it was (no copy
// of the Txn can pass any more) and fn runs again, as after a conflict.
// An Update returns an "outcome unknown" error (the Txn may have been
// applied; callers treat it as with any remote store) only when it has
// no fence (it wrote only keys it did not read, or read absent), its
// context ended, the store closed, etcd gave no answer within
// MajorityWait, or the history it needed was compacted. See
// docs/design/2026-11-29-etcd-unknown-outcome.md.
//
// Watch follows etcd's watch of the prefix, split into one batch per
// revision (one Txn is one revision: an Update, or several independent
// ones committed together). It starts after the revision current when
// Watch is called (or after from), requires a leader (a
// member cut off from the majority ends the watch rather than falling
// silent), and closes its channel when the watch is cancelled, the
// revision asked for is compacted, or the client closes: the caller then
// resyncs.
//
// Campaign uses an etcd election (package concurrency) on its own session:
// a lease with Options.SessionTTL that the client keeps alive; Done closes
// when the lease lapses, the session ends or the leader resigns. A
// candidate's wait behind earlier candidates ends with its session too
// (Campaign fails, the caller campaigns again): a candidate whose lease
// lapsed has no key in the election and must not "win" on it later.
package etcdkv
