// Package pebblekv is a durable kv.Store on Pebble, the LSM engine of
// CockroachDB: one directory holding a write-ahead log and sorted tables.
//
// Updates run one at a time, under a lock, in an indexed batch: reads go
// through the batch, so a transaction reads its own writes over the latest
// committed state, which no other writer can change while it runs. Updates are
// therefore serializable and never conflict (kv.ErrConflict is never
// returned). The batch is committed with a synced WAL write, and Update returns
// nil only after that fsync. A View reads a Pebble snapshot.
//
// Pebble makes a committed batch visible before its WAL fsync ends, so a View
// or a later Update may read a write whose Update has not returned yet and
// that a crash would lose; a later Update that commits is durable only with
// every write before it in the log, so no committed Update ever depends on a
// lost one. With Options.PipelinedSync the lock is released as soon as the
// batch is visible, and Updates wait for the fsync outside it, so concurrent
// Updates share one fsync (group commit). This changes no guarantee above; it
// relies on Pebble's DB.ApplyNoSyncWait, which Pebble marks experimental.
//
// With Options.WALSyncEvery the store defers its WAL fsyncs (walsync.go):
// Pebble runs on a file system whose WAL files answer Pebble's syncs at once,
// after Pebble has written the batch to the file, so an Update returns once
// its batch is in the operating system: a crash of the process loses no
// Update that returned, a crash of the machine may lose those of the last
// WALSyncEvery. Sync (kv.Syncer) fsyncs the WAL files for real; concurrent
// callers share one fsync, and a failed fsync fails every later Sync (the
// kernel may have dropped the pages it could not write). Pebble's own
// tables, manifest and directories sync as Pebble asks, and a WAL file is
// synced for real before it is closed. This is the store's group commit
// across time rather than across concurrent callers: a lone writer doing
// small updates one after the other pays no fsync each.
//
// The store is a kv.Watcher and a kv.Elector within its process (package
// kvlocal, feed.go): each committed Update publishes its net writes, in
// commit order, once they are visible; revisions restart at each Open.
//
// Get and Scan hand out copies, valid until fn returns. A transaction must not
// be used after its function returns, nor from more than one goroutine, and fn
// must not start another transaction on the same store.
//
// The directory is locked while open; a second Open fails at once with an
// error naming it.
package pebblekv
