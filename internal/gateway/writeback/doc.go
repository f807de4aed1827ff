// Package writeback applies a fileset's write-back queue to its home
// (issue 14 item 5, Panache §6): the operations the meta service queued,
// in the same kv transaction as each local change, for every update in a
// fileset of mode sw or iw (meta/wbqueue*.go).
//
// Contract. An Applier claims operations from the meta service
// (meta.ClaimWriteback) with a lease (TTL): the service hands out only
// operations whose every earlier queued operation they depend on is done
// — same path, a path under the other (parent before child, children
// before rmdir), either side of a rename — so a claimed batch is applied
// in parallel. Several gateways share a fileset by Shard/Shards (a hash of
// the inode over the live gateways); a killed gateway's claims end with
// their lease and another takes them, so nothing acknowledged is lost.
// Every operation is idempotent to apply again (Mkdir or Create meeting
// EEXIST, Remove or Rmdir meeting ENOENT, a Rename whose source is gone are
// done).
//
// A Put writes the file's whole content as Tessera holds it when the Put
// is applied (Source), so writes coalesce; a file gone by then is skipped
// (its removal follows in the queue). Only operations queued longer than
// the sync lag ago are applied, unless flushing (Drain with lag 0).
//
// Errors: a home error that home.Retryable calls retryable (home down,
// timeouts) gives the operation back to be tried after a backoff
// (exponential, Backoff up to MaxBackoff); any other error marks it failed
// for good, kept in the queue for status and holding nothing back. So with
// home down updates keep succeeding locally, the queue grows, and it drains
// when home returns (disconnected operation).
//
// Conflicts. Before a Put over a file it wrote before, the applier
// compares home's change token with the one it recorded after its last
// apply (meta.WritebackToken). When they differ, home changed it too and
// the fileset's policy decides: cache-wins writes the cache's version;
// home-wins keeps home's and drops the cache's; keep-both keeps home's at
// the path and the cache's under the fileset's ".conflicts/" directory at
// home (PATH.SEQ). A file made in the cache whose name home has by the
// time its Put is applied (made on both sides, e.g. while home was down
// and the directory not listed) is a conflict too, settled the same way,
// unless home's file has the cache's bytes (this Put's own, applied
// before a crash).
// Every conflict leaves a report file
// ".conflicts/PATH.SEQ.report" at home saying what happened.
package writeback
