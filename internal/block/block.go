// Package block defines Tessera's content-addressed blocks: their names
// (BLAKE3-256 hashes), the Store interface every block holder implements, and
// the errors they classify.
//
// Tree (tree.go) keeps a block's BLAKE3 tree so that the name of a version
// changed in a few ranges is computed by rehashing only those: the same
// name Sum gives.
//
// Contract. A block is immutable: Put of a hash that is already present keeps
// the stored copy (and refreshes its age, so the garbage collector's grace
// period counts from the latest Put). Put verifies that data hashes to h and
// returns only once the block is durable. Get verifies what it returns against
// the hash: a Store never hands out bytes that do not match their name; a
// mismatch is ErrCorrupt, which callers must not retry against the same copy.
//
// Sub-packages: disk (blocks as files on a local file system), server (the
// HTTP face of a disk store, `tessera blockd`), and client (a Store that talks
// to a block server over HTTP, with bounded retries).
package block

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/zeebo/blake3"
)

// HashSize is the length of a block name in bytes.
const HashSize = 32

// Hash names a block: the BLAKE3-256 digest of its content. The zero Hash
// names no block; recipes use it for a hole.
type Hash [HashSize]byte

// Sum returns the hash of data.
func Sum(data []byte) Hash { return Hash(blake3.Sum256(data)) }

// IsZero reports whether h is the zero hash (a hole).
func (h Hash) IsZero() bool { return h == Hash{} }

// String returns h in lower-case hex.
func (h Hash) String() string { return hex.EncodeToString(h[:]) }

// Short returns the first 12 hex digits of h, for logs.
func (h Hash) Short() string { return hex.EncodeToString(h[:6]) }

// ParseHash parses a 64-digit hex block name.
func ParseHash(s string) (Hash, error) {
	var h Hash
	if len(s) != 2*HashSize {
		return h, fmt.Errorf("block name %q: want %d hex digits, got %d", s, 2*HashSize, len(s))
	}
	if _, err := hex.Decode(h[:], []byte(s)); err != nil {
		return h, fmt.Errorf("block name %q: %v", s, err)
	}
	return h, nil
}

var (
	// ErrNotFound reports that a store does not hold the block.
	ErrNotFound = errors.New("block not found")
	// ErrCorrupt reports bytes that do not match their hash. It is never
	// retried against the same copy.
	ErrCorrupt = errors.New("block corrupt")
	// ErrHashMismatch reports a Put whose data does not match the given name.
	ErrHashMismatch = errors.New("block data does not match its name")
	// ErrUnavailable reports a store that could not be reached (after the
	// retries a client makes). It is retryable later.
	ErrUnavailable = errors.New("block server unavailable")
	// ErrNoSpace reports a store whose disk is full.
	ErrNoSpace = errors.New("block store out of space")
)

// Store holds content-addressed blocks.
type Store interface {
	// Put stores data under h, after checking Sum(data) == h, and returns
	// once the block is durable.
	Put(ctx context.Context, h Hash, data []byte) error
	// Get returns the whole block, verified against h.
	Get(ctx context.Context, h Hash) ([]byte, error)
	// Has reports, for each hash, whether the store holds it.
	Has(ctx context.Context, hs []Hash) ([]bool, error)
}

// Toucher is the optional capability of marking blocks as just written.
// A client about to commit blocks it uploaded a while ago touches them:
// a collection running meanwhile removes only blocks older than its cutoff
// (Lister.Remove), so a touched block is spared, and one already gone is
// found before a commit names it.
type Toucher interface {
	// Touch reports, for each hash, whether the store holds it, and sets
	// the latest-Put time of those it holds to now.
	Touch(ctx context.Context, hs []Hash) ([]bool, error)
}

// Checker is the optional capability of verifying a stored copy where it
// lies, without sending it: fsck and the scrub of block servers use it.
type Checker interface {
	// Check re-hashes the stored copy of h. It returns nil for a good copy,
	// an error wrapping ErrNotFound when there is none, and an error
	// wrapping ErrCorrupt for a copy whose content does not match h. With
	// quarantine a corrupt copy is also moved aside (kept for inspection,
	// no longer served or listed), so that it gets repaired from a good
	// copy; without it nothing changes on the store.
	Check(ctx context.Context, h Hash, quarantine bool) error
}

// Info describes one stored block, as listed for the garbage collector.
type Info struct {
	Hash    Hash
	Size    int64
	ModTime int64 // unix nanoseconds of the latest Put
}

// Lister is the optional capability of enumerating and removing blocks,
// used by gc, fsck and status. Block servers implement it; caches need not.
type Lister interface {
	// List calls fn for every stored block, in no particular order.
	List(ctx context.Context, fn func(Info) error) error
	// Remove deletes h if its latest Put is older than notAfter (unix ns);
	// it reports whether it removed the block. Removing an absent block is
	// not an error.
	Remove(ctx context.Context, h Hash, notAfter int64) (bool, error)
	// Usage returns the number of blocks and their total size in bytes.
	Usage(ctx context.Context) (blocks, bytes int64, err error)
}

// Removal is one conditional removal of a batch: Hash goes if its latest
// Put is older than NotAfter (unix ns), exactly as Lister.Remove(Hash,
// NotAfter). Each removal carries its own cutoff: the reclaimer's cutoff
// is the time of the block's release, and one cutoff for a whole batch
// would take copies written or touched after their own release.
type Removal struct {
	Hash     Hash
	NotAfter int64
}

// BatchRemover is the optional capability of removing many blocks in one
// call (over HTTP, one request instead of one per block): the reclaimer
// needs it. Without it, a caller calls Lister.Remove per removal.
type BatchRemover interface {
	// RemoveMany does rs[i] for every i and reports, for each, whether
	// it removed the block (false: absent, or written or touched at or
	// after its NotAfter). On an error the removals made before it stand
	// (each is conditional and idempotent: doing them again is
	// harmless); the results are then nil.
	RemoveMany(ctx context.Context, rs []Removal) ([]bool, error)
}

// ErrNoSpaceInfo is returned by Spacer.Space when the store cannot say
// (a block server whose backend does not report it).
var ErrNoSpaceInfo = errors.New("block store does not report its free space")

// Spacer is the optional capability of a store to tell the free and total
// bytes of the file system it keeps its blocks on (the status page's
// capacity).
type Spacer interface {
	Space(ctx context.Context) (free, size int64, err error)
}

// Space is what a block store takes on disk and what its file system has.
type Space struct {
	// OnDisk is what the store takes on its file system as du counts it
	// (allocated blocks: block files, directories, quarantined copies);
	// -1 when the store cannot say.
	OnDisk int64
	// Free is what an unprivileged writer may still write, Size the file
	// system's total, both in bytes.
	Free, Size int64
	// FS names the file system the store is on: stores on one file
	// system of one host give the same name (so that a sum of Free and
	// Size counts it once), others different ones. At most MaxFSName
	// bytes; empty when the store cannot say.
	FS string
}

// MaxFSName bounds Space.FS as a peer may send it.
const MaxFSName = 128

// SpaceReporter is the optional capability of a store to tell its Space:
// the status command's bytes on disk, a mount's df.
type SpaceReporter interface {
	SpaceInfo(ctx context.Context) (Space, error)
}

// AllZero reports whether data is all zero bytes (a block of zeros is a
// hole, never stored).
func AllZero(data []byte) bool {
	for len(data) >= 8 {
		if data[0]|data[1]|data[2]|data[3]|data[4]|data[5]|data[6]|data[7] != 0 {
			return false
		}
		data = data[8:]
	}
	for _, x := range data {
		if x != 0 {
			return false
		}
	}
	return true
}
