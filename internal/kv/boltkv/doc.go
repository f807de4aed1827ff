// Package boltkv is the embedded, durable kv.Store on bbolt: one file, one
// bucket, one writer at a time.
//
// Update runs in a bbolt read-write transaction, so Updates are serialized and
// never conflict (kv.ErrConflict is never returned); when it returns nil the
// transaction is on disk (bbolt fsyncs its pages, then its meta page). View runs
// in a bbolt read-only transaction: a snapshot that sees only committed,
// durable writes. With Options.Batch, Updates from concurrent goroutines are
// grouped into one bbolt transaction and one commit (bbolt's DB.Batch); fn may
// then run more than once, as the kv contract allows, and an fn that fails
// makes the others in its group run again.
//
// Slices handed out by Get and Scan point into the memory-mapped file: they
// are valid only while fn runs and must not be modified. A transaction must not
// be used after its function returns, nor from more than one goroutine, and fn
// must not start another transaction on the same store: bbolt's writer may wait
// for readers to finish before it grows the mapping.
//
// The file is locked while open. Open waits Options.LockTimeout for a lock
// another process holds, then fails with an error naming the path.
package boltkv
