// Package memkv is an in-memory kv.Store for unit tests whose subject is
// logic, not storage. It keeps nothing across Close.
//
// It honours the whole kv contract. The committed state is a copy-on-write
// B-tree that is never written once published: a View reads the tree that was
// current when it began, without a lock, so it sees one snapshot however long
// it runs. Updates run one at a time; each writes to a lazy clone of the
// current tree and publishes it on commit, so a failed Update is rolled back
// by dropping its clone. Updates are therefore serializable and never
// conflict; kv.ErrConflict is never returned.
//
// It is also a kv.Watcher and a kv.Elector within the process (package
// kvlocal): each Update publishes its net writes to the change feed.
//
// Slices handed out by Get and Scan point into the store and must not be
// modified. A transaction must not be used after its function returns, nor
// from more than one goroutine.
package memkv
