package kv

import (
	"context"
	"time"
)

// This file holds what a store shared by several meta processes offers
// beyond transactions (issue 13): a feed of committed changes, a read
// consistency choice, and elections. A single-process engine may implement
// them in memory; callers test for them with a type assertion and fall back
// to single-process behaviour when a store has none.

// Change is one committed write seen by a Watcher: the key's value after the
// commit, or Deleted. Rev is the store's revision of the commit that made
// it; every Change of one commit has the same Rev, and Revs grow with commit
// order.
type Change struct {
	Key     []byte
	Value   []byte
	Deleted bool
	Rev     int64
}

// Watcher is implemented by stores whose commits other processes sharing
// the store can follow.
type Watcher interface {
	// Watch delivers, in commit order, every change to a key with the given
	// prefix committed after revision from (0: after the moment Watch is
	// called), batched by commit. The channel closes when ctx ends or the
	// watch fails; the last batch may then be followed by nothing, and the
	// caller must assume it missed changes (and, for example, invalidate
	// everything it caches) before it watches again.
	Watch(ctx context.Context, prefix []byte, from int64) (<-chan []Change, error)
}

// Consistency says how fresh a View must be on a store whose reads may be
// served by a replica.
type Consistency int

const (
	// Linearizable views see every commit that finished before they began
	// (on etcd: a quorum read). It is what a View gives without a choice.
	Linearizable Consistency = iota
	// Serializable views see a consistent snapshot that may lag the latest
	// commits (on etcd: the local member's state, no round trip to the
	// leader). Single-process engines treat it as Linearizable.
	Serializable
)

type consistencyKey struct{}

// WithConsistency returns a context whose Views read at consistency c.
// An Update's outcome is linearizable whatever c: its commit checks that
// what it read is unchanged. With Serializable a replicated store may read
// an Update's snapshot from a replica (etcd: the member the client talks
// to), saving the quorum round trip before fn runs; a snapshot that lags
// fails that check like any conflict and fn runs again on the latest.
func WithConsistency(ctx context.Context, c Consistency) context.Context {
	return context.WithValue(ctx, consistencyKey{}, c)
}

// ConsistencyOf returns the consistency ctx asks for (Linearizable when it
// names none).
func ConsistencyOf(ctx context.Context) Consistency {
	c, _ := ctx.Value(consistencyKey{}).(Consistency)
	return c
}

// Elector is implemented by stores that can elect one leader among the
// processes sharing them, for work that must run once per cluster (the block
// collector, the mover, the reaper's sweeps, server-map sweeps).
type Elector interface {
	// Campaign blocks until the caller, named id, leads the election
	// called name, or ctx ends. The returned Leadership ends when the caller
	// resigns, dies (its store lease lapses) or loses its connection to the
	// store: work done as leader must stop when Done closes.
	Campaign(ctx context.Context, name, id string) (Leadership, error)
}

// Leadership is a won election.
type Leadership interface {
	// Done closes when the leadership is lost or resigned.
	Done() <-chan struct{}
	// Resign gives the leadership up so another candidate can win at once.
	Resign(ctx context.Context) error
}

// Member is one server of a replicated store, as Members reports it.
type Member struct {
	Name    string
	Addr    string // client URL
	Leader  bool
	Healthy bool   // answered a status request just now
	Err     string // why not, when !Healthy
	Rev     int64  // the member's latest applied revision, when Healthy
	// DBSize is the size of the member's backend file and DBInUse the
	// part of it that holds data (the rest is free pages a
	// defragmentation gives back), when Healthy; 0 unknown.
	DBSize, DBInUse int64
}

// Members is implemented by replicated stores that can list their servers
// and their health (tessera status).
type Members interface {
	Members(ctx context.Context) ([]Member, error)
}

// Maintenance is what the meta role last did to a replicated store's
// history and files (Maintainer; tessera status).
type Maintenance struct {
	// CompactedRev is the revision the history was last compacted to
	// (every older version of a key is gone), at CompactedAt; 0 never.
	CompactedRev int64
	CompactedAt  time.Time
	// DefragAt is when a member's file was last defragmented, and
	// DefragMember which one; zero never.
	DefragAt     time.Time
	DefragMember string
	// Err is why the latest round failed; "" it did not.
	Err string
	// At is when the latest round ran; zero never.
	At time.Time
}

// MaintainOptions bound one round of Maintainer.Maintain.
type MaintainOptions struct {
	// Retain is how much history is kept: the round compacts to the
	// newest revision it noted at least Retain ago (rounds note the
	// revision they find), so what is older than Retain plus the
	// rounds' interval is compacted.
	Retain time.Duration
	// DefragFree is how many bytes of a member's file must be free
	// before that member is defragmented (a defragmentation stops the
	// member's service while it runs, so it is done one member at a
	// time); 0 defragments every member every round.
	DefragFree int64
}

// Maintainer is implemented by stores that keep a history of versions
// and files that do not shrink by themselves (etcd): the meta role's
// leader runs Maintain on a schedule, and tessera status reports its state.
type Maintainer interface {
	// Maintain compacts the history and defragments the members that
	// need it, one at a time, and records and returns the state.
	Maintain(ctx context.Context, now time.Time, opts MaintainOptions) (Maintenance, error)
	// Maintenance returns the state the latest Maintain recorded, by
	// any process sharing the store.
	Maintenance(ctx context.Context) (Maintenance, error)
}
