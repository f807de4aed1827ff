// Package kv defines the transactional, ordered key-value interface the
// metadata service keeps all of its state in, and the errors its engines
// return.
//
// Contract. A Store runs transactions. View runs a read-only transaction over
// a consistent snapshot. Update runs a read-write transaction: every read sees
// one snapshot plus the transaction's own writes; at commit the engine checks
// that nothing the transaction read was changed by a transaction that committed
// in the meantime, and if so the commit fails with ErrConflict. Update retries
// conflicting transactions itself (bounded), so fn must be free of side effects
// other than on the Txn: it may run more than once. View's fn may run more
// than once too: a replicated engine runs it again on a fresh snapshot when
// the first can no longer be read (etcdkv: its revision was compacted away
// while fn read it). So a View's fn sets everything it hands out afresh at
// its start (resets the slices it appends to, starts a paged scan again from
// where the call began), and what it returns counts only from the run that
// ended the View. When Update returns nil the
// writes are visible to every later View and durable (for durable engines),
// unless the store implements Syncer: then they survive a crash of the
// process, and are durable once a later Sync returns nil.
//
// Keys are compared bytewise. A Txn and the slices it hands out are valid only
// while fn runs; callers copy what they keep.
//
// Engines live in sub-packages: memkv (in memory, for unit tests), boltkv
// (embedded), pebblekv (embedded, durable, the default) and etcdkv (a
// shared etcd cluster; cluster.go: change feeds, read consistency and
// elections for several meta processes). Every engine passes the
// conformance suite in kvtest. Engines that read several keys, or small
// ranges, in one round trip offer it through GetMany and Prefetch, and
// those that can check a key's absence at commit without reading it
// through PresumeAbsent (getmany.go): optional, with a fallback that
// reads as Get and Scan do.
package kv

import (
	"context"
	"errors"
)

// ErrConflict reports that an Update transaction read a key another
// transaction changed before it could commit, and the retries ran out.
var ErrConflict = errors.New("kv: transaction conflict")

// ErrClosed reports use of a Store after Close.
var ErrClosed = errors.New("kv: store closed")

// Store is a transactional, ordered key-value store.
type Store interface {
	// View runs fn in a read-only transaction over a consistent snapshot.
	// fn may run more than once; see the package comment.
	View(ctx context.Context, fn func(tx Txn) error) error
	// Update runs fn in a read-write transaction and commits it if fn
	// returns nil. It retries fn on conflicts; see the package comment.
	Update(ctx context.Context, fn func(tx Txn) error) error
	// Close releases the store. Pending transactions may fail with ErrClosed.
	Close() error
}

// Syncer is implemented by stores that may return from Update before its
// writes are durable (a durable engine that defers its fsyncs, such as
// pebblekv with Options.WALSyncEvery). A store without it is durable at
// Update's return, so callers that need durability call Sync when the store
// has it and nothing otherwise.
type Syncer interface {
	// Sync returns nil once every Update that returned before the call is
	// durable.
	Sync(ctx context.Context) error
}

// Txn is one transaction. Put and Delete fail inside View.
type Txn interface {
	// Get returns the value of key, or nil and false when it is absent.
	Get(key []byte) ([]byte, bool, error)
	// Put sets key to value. The engine copies both.
	Put(key, value []byte) error
	// Delete removes key; deleting an absent key is not an error.
	Delete(key []byte) error
	// Scan calls fn for each key in [start, end) in ascending order, until
	// fn returns false or an error. A nil end means no upper bound. Writes
	// made by this transaction are visible to Scan.
	Scan(start, end []byte, fn func(key, value []byte) (bool, error)) error
}

// PrefixEnd returns the smallest key greater than every key with the given
// prefix, for use as a Scan end; nil when there is none.
func PrefixEnd(prefix []byte) []byte {
	end := append([]byte(nil), prefix...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}
