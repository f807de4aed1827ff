package policy

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
)

// The presets are one table rather than a file each: they differ only in
// knobs, and side by side (as in CAPFS Table 1) the differences are what
// the reader sees. A policy with behaviour of its own belongs in its own
// file, embedding Base.

// Default is the policy of a mount given none: close-to-open, what the
// client did before policies existed.
const Default = "session"

// ErrUnknownPolicy classifies a name that is not a preset.
var ErrUnknownPolicy = errors.New("unknown policy")

// presets is read-only: Lookup hands out copies. Ordered from the strongest
// consistency to the weakest, then the special case.
var presets = []Base{
	// Sequential consistency with a coherent cache (CAPFS SEQ-2).
	{name: "posix", knobs: Knobs{Commit: CommitEachWrite, Conflict: ConflictRetry, Cache: CacheCoherent,
		Reads: ReadLocal, Durability: DurableMajority}},
	// Sequential consistency without a cache: every read asks meta (SEQ-1).
	{name: "seq-nocache", knobs: Knobs{Commit: CommitEachWrite, Conflict: ConflictRetry, Cache: CacheNone,
		Reads: ReadSynchronized, Durability: DurableMajority}},
	// Forced commits, coherent cache (FOR-2): no retry on conflict.
	{name: "forced", knobs: Knobs{Commit: CommitEachWrite, Conflict: ConflictForce, Cache: CacheCoherent,
		Reads: ReadLocal, Durability: DurableMajority}},
	// Forced commits and a cache without coherence (REL-1). The cache is
	// timed with a long TTL rather than CacheForever: the files are not
	// write-once, and a relaxed reader should still see another client's
	// change eventually, without a callback.
	{name: "relaxed", knobs: Knobs{Commit: CommitOnSync, Conflict: ConflictForce, Cache: CacheTimed, CacheTTL: time.Minute,
		Reads: ReadLocal, Durability: DurableMajority, NearbyMeta: true}},
	// Close-to-open (AFS sessions): commit on close, revalidate on open.
	{name: "session", knobs: Knobs{Commit: CommitOnSync, Conflict: ConflictRetry, Cache: CacheTimed, CacheTTL: time.Second,
		CloseToOpen: true, Reads: ReadLocal, Durability: DurableMajority, NearbyMeta: true}},
	// NFS: attributes trusted for 3 s (actimeo), opens within it included.
	{name: "nfs", knobs: Knobs{Commit: CommitOnSync, Conflict: ConflictForce, Cache: CacheTimed, CacheTTL: 3 * time.Second,
		Reads: ReadLocal, Durability: DurableMajority, NearbyMeta: true}},
	// Write once: the content committed first is final, so it is cached
	// for good.
	{name: "immutable", knobs: Knobs{Commit: CommitOnSync, Conflict: ConflictRetry, Cache: CacheForever,
		Reads: ReadLocal, Durability: DurableMajority, WriteOnce: true}},
}

// Lookup returns the preset named name; an unknown name gives an error
// (matching ErrUnknownPolicy) that lists the valid ones.
func Lookup(name string) (Policy, error) {
	for _, p := range presets {
		if p.name == name {
			return p, nil
		}
	}
	names := make([]string, len(presets))
	for i, p := range presets {
		names[i] = p.name
	}
	return nil, fmt.Errorf("%w %q: valid policies are %s", ErrUnknownPolicy, name, strings.Join(names, ", "))
}

// Names returns the presets' names, sorted.
func Names() []string {
	names := make([]string, len(presets))
	for i, p := range presets {
		names[i] = p.name
	}
	sort.Strings(names)
	return names
}

// All returns the presets from the strongest consistency to the weakest.
func All() []Policy {
	all := make([]Policy, len(presets))
	for i, p := range presets {
		all[i] = p
	}
	return all
}
