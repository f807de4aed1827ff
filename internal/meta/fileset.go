package meta

import (
	"fmt"
	"net/url"
	"time"
)

// FilesetMode is how a fileset caches its home (the modes of AFM, Panache
// §4): read-only, single-writer, local-update, independent-writer.
type FilesetMode string

// The fileset modes.
const (
	// ModeRO caches home for reading; local updates are refused (EROFS).
	ModeRO FilesetMode = "ro"
	// ModeSW is the only writer of its home: local updates are written
	// back, and home is not revalidated.
	ModeSW FilesetMode = "sw"
	// ModeLU allows local updates that are kept in the cache and never
	// written back; home is still revalidated for what was not changed.
	ModeLU FilesetMode = "lu"
	// ModeIW shares its home with other writers: updates are written back
	// and home is revalidated; conflicts follow the fileset's policy.
	ModeIW FilesetMode = "iw"
)

// Prefetch settings: what a gateway fetches beyond the ranges a reader
// asked for.
const (
	PrefetchNone  = "none"  // only what the reader needs
	PrefetchRange = "range" // the rest of the ranges the owner split
	PrefetchWhole = "whole" // the whole file, on its first miss
)

// Conflict policies: who wins when both home and cache changed an object.
const (
	ConflictsCacheWins = "cache-wins"
	ConflictsHomeWins  = "home-wins"
	ConflictsKeepBoth  = "keep-both"
)

// Fileset states.
const (
	FilesetActive = "active"
)

// Limits a fileset record's decoder enforces.
const (
	// MaxHomeURL is the longest home URL.
	MaxHomeURL      = 4096
	maxFilesetField = 64
)

// Fileset is a directory of the namespace that caches a remote home store
// (docs/design/2026-11-24-gateway.md). Root is the directory's inode; its
// record lives under "g" root.
type Fileset struct {
	Root Ino
	// Home is the home store's URL (file://, s3://, tessera://).
	Home string
	Mode FilesetMode
	// ValidityLag is how long what was read from home is trusted before
	// it is compared with home again (revalidation).
	ValidityLag time.Duration
	// SyncLag is how long a local update may wait before it is written
	// back to home (sw, iw).
	SyncLag time.Duration
	// Prefetch is PrefetchNone, PrefetchRange or PrefetchWhole.
	Prefetch string
	// Conflicts is the conflict policy (Conflicts* constants).
	Conflicts string
	// State is FilesetActive today.
	State string
	// Created is when the fileset was created (unix ns).
	Created int64
	// Reads are the mounts' read counts (FilesetReads), filled by
	// Fileset and Filesets; not part of the settings.
	Reads FilesetReads
}

// Defaults of a fileset's settings.
const (
	DefaultValidityLag = 15 * time.Second
	DefaultSyncLag     = 15 * time.Second
)

// Normalize fills defaults into the empty fields of f and checks every
// field, naming what is wrong (ErrInvalid).
func (f *Fileset) Normalize() error {
	if f.Home == "" {
		return fmt.Errorf("fileset: no home URL: %w", ErrInvalid)
	}
	if len(f.Home) > MaxHomeURL {
		return fmt.Errorf("fileset: home URL of %d bytes, max %d: %w", len(f.Home), MaxHomeURL, ErrInvalid)
	}
	u, err := url.Parse(f.Home)
	if err != nil {
		return fmt.Errorf("fileset: home URL %s: %v: %w", Quote(f.Home), err, ErrInvalid)
	}
	switch u.Scheme {
	case "file", "s3", "tessera":
	default:
		return fmt.Errorf("fileset: home URL %s: scheme %s is not file, s3 or tessera: %w", Quote(f.Home), Quote(u.Scheme), ErrInvalid)
	}
	if f.Mode == "" {
		f.Mode = ModeRO
	}
	switch f.Mode {
	case ModeRO, ModeSW, ModeLU, ModeIW:
	default:
		return fmt.Errorf("fileset: mode %s is not ro, sw, lu or iw: %w", Quote(string(f.Mode)), ErrInvalid)
	}
	if f.ValidityLag == 0 {
		f.ValidityLag = DefaultValidityLag
	}
	if f.SyncLag == 0 {
		f.SyncLag = DefaultSyncLag
	}
	if f.ValidityLag < 0 || f.SyncLag < 0 {
		return fmt.Errorf("fileset: negative lag (validity %v, sync %v): %w", f.ValidityLag, f.SyncLag, ErrInvalid)
	}
	if f.Prefetch == "" {
		f.Prefetch = PrefetchRange
	}
	switch f.Prefetch {
	case PrefetchNone, PrefetchRange, PrefetchWhole:
	default:
		return fmt.Errorf("fileset: prefetch %s is not none, range or whole: %w", Quote(string(f.Prefetch)), ErrInvalid)
	}
	if f.Conflicts == "" {
		f.Conflicts = ConflictsKeepBoth
	}
	switch f.Conflicts {
	case ConflictsCacheWins, ConflictsHomeWins, ConflictsKeepBoth:
	default:
		return fmt.Errorf("fileset: conflicts %s is not cache-wins, home-wins or keep-both: %w", Quote(string(f.Conflicts)), ErrInvalid)
	}
	if f.State == "" {
		f.State = FilesetActive
	}
	if len(f.State) > maxFilesetField {
		return fmt.Errorf("fileset: state of %d bytes: %w", len(f.State), ErrInvalid)
	}
	return nil
}

// CacheState is how much of a home object an inode of a fileset holds.
type CacheState uint8

// The cache states of a fileset inode.
const (
	// CachePlaceholder: the entry was seen in a listing of its directory;
	// a directory's entries, a file's data are not fetched yet.
	CachePlaceholder CacheState = iota + 1
	// CachePartial: some of a file's ranges are fetched.
	CachePartial
	// CacheCached: a directory's listing, or a file's whole content, is
	// in the cache.
	CacheCached
)

// String names the state.
func (c CacheState) String() string {
	switch c {
	case CachePlaceholder:
		return "placeholder"
	case CachePartial:
		return "partial"
	case CacheCached:
		return "cached"
	}
	return fmt.Sprintf("CacheState(%d)", uint8(c))
}

// GatewayInfo is the optional gateway section of an inode of a fileset:
// which home object it caches, that object's attributes when it was last
// read (to tell at revalidation whether home changed), and how much of it
// is cached. An inode made locally in a fileset has a section with an
// empty HomePath until it is written back.
type GatewayInfo struct {
	// Fileset is the fileset's root inode.
	Fileset Ino
	// HomePath is the object's path in the home store, relative to the
	// home's root ("" for the root itself).
	HomePath string
	// HomeMtime, HomeCtime (unix ns, 0 where home has none), HomeSize and
	// Token are the home attributes last seen.
	HomeMtime, HomeCtime int64
	HomeSize             uint64
	Token                string
	State                CacheState
	// Cached is, for a file in state CachePartial, the runs of blocks
	// fetched so far (sorted, disjoint, not touching; at most
	// MaxCachedRanges). Blocks outside them have no data in the recipe:
	// a reader must have them fetched first, or it would read zeros.
	Cached []BlockRange
	// Validated is when the object was last compared with home (unix ns).
	Validated int64
}

// MaxHomePath is the longest home path a gateway section holds; MaxToken
// the longest change token.
const (
	MaxHomePath = 4096
	MaxToken    = 1024
)
