package policy

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"time"
)

// CommitMode is when buffered writes are committed to the meta service.
type CommitMode uint8

// Commit modes. The client commits on fsync and close in every mode.
const (
	CommitEachWrite CommitMode = iota // after every write
	CommitOnSync                      // on fsync and close only
	CommitPeriodic                    // also every CommitEvery or CommitWrites writes
)

// ConflictMode is what a commit does when another client committed first.
type ConflictMode uint8

// Conflict modes (CAPFS force_commit).
const (
	ConflictRetry ConflictMode = iota // redo the writes on the current content (optimistic)
	ConflictForce                     // overwrite what is there: last writer wins
)

// CacheMode is how the client caches attributes and recipes.
type CacheMode uint8

// Cache modes (CAPFS use_hcache and hcache_coherence).
const (
	CacheNone     CacheMode = iota // ask the meta service every time
	CacheCoherent                  // cache; the meta service calls back on change
	CacheTimed                     // cache for CacheTTL, then ask again (NFS-like)
	CacheForever                   // cache until evicted: only for content that cannot change
)

// ReadMode is what a read promises.
type ReadMode uint8

// Read modes.
const (
	ReadLocal        ReadMode = iota // serializable: served from the caches
	ReadSynchronized                 // linearizable: revalidate with meta first
)

// Durability is how many replicas acknowledge a commit's blocks.
type Durability uint8

// Durability levels.
const (
	DurableMajority Durability = iota // a majority of the replicas
	DurableAll                        // every replica
)

// Knobs are a policy's settings (DESIGN §4).
type Knobs struct {
	Commit CommitMode
	// CommitEvery bounds, under CommitPeriodic, how long after the first
	// uncommitted write the commit comes (0 = no time limit). The client
	// runs the timer; hooks only see requests.
	CommitEvery time.Duration
	// CommitWrites, under CommitPeriodic, commits once this many writes
	// are uncommitted (0 = no count limit).
	CommitWrites int
	Conflict     ConflictMode
	Cache        CacheMode
	CacheTTL     time.Duration // CacheTimed: how long a cached entry is trusted
	// CloseToOpen revalidates at every open, so that an open sees what the
	// last close committed (AFS session semantics) even within the TTL.
	CloseToOpen bool
	Reads       ReadMode
	Durability  Durability
	WriteOnce   bool // immutable: content, once committed, cannot change
	// NearbyMeta lets the meta service answer this policy's read-only
	// calls with a serializable read of its nearest store replica (its
	// own site's etcd member), which may lag the latest commit by the
	// replication delay (issue 13). Only for timed caches, which accept
	// that much staleness already; never for a synchronized read
	// (SerializableFor).
	NearbyMeta bool
}

// ErrBadKnobs classifies inconsistent Knobs.
var ErrBadKnobs = errors.New("inconsistent policy knobs")

// Validate reports knobs that contradict each other.
func (k Knobs) Validate() error {
	switch {
	case k.Commit > CommitPeriodic || k.Conflict > ConflictForce || k.Cache > CacheForever ||
		k.Reads > ReadSynchronized || k.Durability > DurableAll:
		return fmt.Errorf("%w: value out of range in %s", ErrBadKnobs, k)
	case k.Commit == CommitPeriodic && k.CommitEvery <= 0 && k.CommitWrites <= 0:
		return fmt.Errorf("%w: periodic commit needs a positive period or write count", ErrBadKnobs)
	case k.CommitEvery < 0 || k.CommitWrites < 0:
		return fmt.Errorf("%w: negative commit period or write count", ErrBadKnobs)
	case k.Cache == CacheTimed && k.CacheTTL <= 0:
		return fmt.Errorf("%w: timed cache needs a positive TTL", ErrBadKnobs)
	case k.Cache == CacheForever && !k.WriteOnce:
		return fmt.Errorf("%w: a cache without expiry or callbacks is only safe for write-once files", ErrBadKnobs)
	case k.NearbyMeta && (k.Cache != CacheTimed || k.Reads == ReadSynchronized):
		return fmt.Errorf("%w: serializable (nearby) meta reads need a timed cache and local reads, not %s", ErrBadKnobs, k)
	}
	return nil
}

// DurabilityFor is the durability a commit from a handle opened with flags
// asks for: DurableAll when the commit comes from fsync or the handle is
// O_SYNC or O_DSYNC (rNFS §2.2: every replica acknowledges a synchronous
// write), the policy's level otherwise.
func (k Knobs) DurabilityFor(flags int, fsync bool) Durability {
	if fsync || syncWrites(flags) {
		return DurableAll
	}
	return k.Durability
}

// SerializableFor reports whether a read-only meta call made for a handle
// opened with flags may be served by a serializable read: the policy
// allows it (NearbyMeta) and the handle does not read synchronized
// (O_RSYNC). Everything else reads linearizable, the default.
func (k Knobs) SerializableFor(flags int) bool {
	return k.NearbyMeta && k.Reads != ReadSynchronized && !syncReads(flags)
}

// syncWrites reports whether a handle's writes are synchronized (O_SYNC
// includes the O_DSYNC bit on Linux).
func syncWrites(flags int) bool { return flags&syscall.O_DSYNC != 0 }

// syncReads reports whether a handle's reads are synchronized. On Linux
// O_RSYNC is defined as O_SYNC, so an O_SYNC handle reads synchronized too.
func syncReads(flags int) bool { return flags&syscall.O_RSYNC == syscall.O_RSYNC }

// String names the mode as the command line prints it.
func (m CommitMode) String() string {
	switch m {
	case CommitEachWrite:
		return "each-write"
	case CommitOnSync:
		return "on-sync"
	case CommitPeriodic:
		return "periodic"
	}
	return fmt.Sprintf("commit(%d)", uint8(m))
}

// String names the mode as the command line prints it.
func (m ConflictMode) String() string {
	switch m {
	case ConflictRetry:
		return "retry"
	case ConflictForce:
		return "force"
	}
	return fmt.Sprintf("conflict(%d)", uint8(m))
}

// String names the mode as the command line prints it.
func (m CacheMode) String() string {
	switch m {
	case CacheNone:
		return "none"
	case CacheCoherent:
		return "coherent"
	case CacheTimed:
		return "timed"
	case CacheForever:
		return "forever"
	}
	return fmt.Sprintf("cache(%d)", uint8(m))
}

// String names the mode as the command line prints it.
func (m ReadMode) String() string {
	switch m {
	case ReadLocal:
		return "local"
	case ReadSynchronized:
		return "synchronized"
	}
	return fmt.Sprintf("reads(%d)", uint8(m))
}

// String names the level as the command line prints it.
func (d Durability) String() string {
	switch d {
	case DurableMajority:
		return "majority"
	case DurableAll:
		return "all"
	}
	return fmt.Sprintf("durability(%d)", uint8(d))
}

// String is the knobs on one line, e.g. "commit=on-sync conflict=retry
// cache=timed(1s) open=revalidate reads=local durability=majority".
func (k Knobs) String() string {
	var b strings.Builder
	b.WriteString("commit=" + k.Commit.String())
	if k.Commit == CommitPeriodic {
		var lim []string
		if k.CommitEvery > 0 {
			lim = append(lim, k.CommitEvery.String())
		}
		if k.CommitWrites > 0 {
			lim = append(lim, fmt.Sprintf("%d writes", k.CommitWrites))
		}
		fmt.Fprintf(&b, "(%s)", strings.Join(lim, " or "))
	}
	b.WriteString(" conflict=" + k.Conflict.String())
	b.WriteString(" cache=" + k.Cache.String())
	if k.Cache == CacheTimed {
		fmt.Fprintf(&b, "(%v)", k.CacheTTL)
	}
	if k.CloseToOpen {
		b.WriteString(" open=revalidate")
	}
	b.WriteString(" reads=" + k.Reads.String())
	b.WriteString(" durability=" + k.Durability.String())
	if k.WriteOnce {
		b.WriteString(" write-once")
	}
	if k.NearbyMeta {
		b.WriteString(" meta=nearby")
	}
	return b.String()
}

// Describe is p's knobs on one line, for the command line.
func Describe(p Policy) string { return p.Knobs().String() }
