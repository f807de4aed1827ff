package meta

import (
	"errors"
	"fmt"
	"syscall"

	"tessera/internal/block"
)

// Ino is an inode number. RootIno is the root directory.
type Ino uint64

// RootIno is the inode number of the file system's root directory.
const RootIno Ino = 1

// DefaultBlockSize is the block size given to new files unless a flag or a
// parent directory says otherwise (see docs/design).
const DefaultBlockSize = 4 << 20

// InlineMax is the largest block-0 content kept inline in the inode record
// instead of on block servers: files up to this size cost the meta service
// one commit and no block upload (no block file, no fsyncs on a block
// server). 64 KiB holds 98% of the files of a source tree such as Go's;
// the bytes ride along with every rewrite of the inode record and every
// lookup reply (docs/design/2026-11-23-small-files.md).
const InlineMax = 64 << 10

// Errors are syscall.Errno values so that they cross the RPC boundary and
// the FUSE boundary unchanged; check them with errors.Is.
var (
	ErrNotFound    = syscall.ENOENT
	ErrExist       = syscall.EEXIST
	ErrNotEmpty    = syscall.ENOTEMPTY
	ErrNotDir      = syscall.ENOTDIR
	ErrIsDir       = syscall.EISDIR
	ErrInvalid     = syscall.EINVAL
	ErrNameTooLong = syscall.ENAMETOOLONG
	ErrNoAttr      = syscall.ENODATA // xattr absent
	ErrRange       = syscall.ERANGE
	ErrPerm        = syscall.EPERM
	ErrTooManyLink = syscall.EMLINK
	ErrIO          = syscall.EIO
	ErrTooBig      = syscall.E2BIG // xattr value over XattrValueMax
)

// MaxNameLen is the longest directory entry name.
const MaxNameLen = 255

// ErrConflict is matched (errors.Is) by a *ConflictError.
var ErrConflict = errors.New("commit conflict")

// ConflictError is returned by Commit when an old hash did not match: it
// carries the current hash of every block index the commit named, so the
// client can redo its change on top of them.
type ConflictError struct {
	Ino     Ino
	Current []BlockChange // Index and New (= the current hash) are set
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("commit inode %d: %d block(s) changed underneath", e.Ino, len(e.Current))
}

// Is makes errors.Is(err, ErrConflict) true.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// Attr are an inode's attributes. Mode holds the file type bits (S_IFMT) and
// the permission bits. Times are unix nanoseconds.
type Attr struct {
	Ino       Ino
	Gen       uint64
	Mode      uint32
	Uid, Gid  uint32
	Nlink     uint32
	Size      uint64
	Atime     int64
	Mtime     int64
	Ctime     int64
	Rdev      uint32
	Change    uint64 // bumped by every change of content or attributes
	BlockSize uint32
	Policy    string // consistency policy name; "" inherits the mount's
	Replicas  uint8  // replication factor; 0 = the cluster's (ReplicasXattr)
	// Sites, when set, is a per-site replication spec in canonical form
	// ("a:1,b:1,c:1", placement.ParseSpec); Replicas is then its total.
	Sites string
}

// IsDir reports whether the inode is a directory.
func (a *Attr) IsDir() bool { return a.Mode&syscall.S_IFMT == syscall.S_IFDIR }

// IsRegular reports whether the inode is a regular file.
func (a *Attr) IsRegular() bool { return a.Mode&syscall.S_IFMT == syscall.S_IFREG }

// Inode is what lookups return: attributes, a symlink's target, and, for a
// regular file whose block 0 is kept inline, that block's content.
type Inode struct {
	Attr
	Target    string // symlink target
	HasInline bool   // block 0 is Inline (possibly empty), not a hash
	Inline    []byte
	// Gateway is set for an inode of a fileset: the home object it
	// caches and how much of it is cached (fileset.go).
	Gateway *GatewayInfo
}

// BlockChange is one block of a commit: the hash the writer based its change
// on (Old) and the new hash (New). The zero hash is a hole. For block 0 a
// writer may instead send NewInline (len <= InlineMax) with InlineNew set; an
// inline block compares as the hash of its content.
type BlockChange struct {
	Index     uint64
	Old, New  block.Hash
	InlineNew bool
	NewInline []byte
	// Compose, when set, says how New is stored: not as a block of its
	// own but as Compose.Base with small patch blocks over it, so that a
	// small write into a large block uploads what it wrote, not the whole
	// block (compose.go). The service keeps the composition under New's
	// hash; readers assemble New from the pieces and check its hash. In a
	// ConflictError's Current it is the current block's composition.
	Compose *Composition
}

// Composition describes a block kept as pieces: its content is the first
// Len bytes of Base's content (zeros past Base's end; Base zero: a hole),
// with each patch written over it in order.
type Composition struct {
	Len     uint32
	Base    block.Hash
	Patches []Patch
}

// Patch is Len bytes at Off of a composed block: the content of block Hash
// (zero hash: Len zero bytes).
type Patch struct {
	Hash     block.Hash
	Off, Len uint32
}

// MaxPatches bounds the patches of one composition: past it a writer
// uploads the whole block again (the composition is compacted). With the
// patches of a block bounded to 1.5 blocks of bytes by the client, 64 KiB
// writes into 4 MiB blocks send 64 KiB + 4 MiB / 96 each, amortized.
const MaxPatches = 96

// CommitReq installs new block hashes into a file's recipe (DESIGN §2.3).
type CommitReq struct {
	Ino     Ino
	Changes []BlockChange // at most MaxCommitBlocks
	// Size is the new file size: with SetSize it is set exactly (truncate)
	// and recipe entries at or past ceil(Size/BlockSize) are dropped;
	// without it the size becomes max(current, Size).
	Size    uint64
	SetSize bool
	Mtime   int64 // 0 leaves mtime alone
	Forced  bool  // install without comparing old hashes
	// Sync makes the call return only after every lease holder it called
	// back has acknowledged the callback or lost its session (DESIGN §2.4).
	Sync bool
	// Superseded are blocks the writer uploaded for this file and then
	// replaced before any commit named them (a partly written block sent
	// to make room, then the whole one): those no recipe names get a
	// release in the commit's transaction, so the reclaimer removes them.
	// At most MaxSuperseded.
	Superseded []block.Hash
}

// MaxSuperseded bounds CommitReq.Superseded.
const MaxSuperseded = 4096

// MaxCommitBlocks bounds CommitReq.Changes: a commit naming more is
// refused with ErrTooBig, and so is one whose transaction would need more
// than the service's Options.MaxTxnOps or MaxTxnBytes (composed blocks,
// changes spread over many recipe segments, or a small bound). Clients split larger commits (internal/client: each part is
// acknowledged only with the last).
const MaxCommitBlocks = 1024

// Recipe is a run of a file's block hashes.
type Recipe struct {
	Change uint64       // the inode's change counter the recipe was read at
	Size   uint64       // file size at that change
	First  uint64       // index of Blocks[0]
	Blocks []block.Hash // zero hash = hole; the run ends at the last block < Size
	// HasInline and Inline describe block 0 when it is kept inline.
	HasInline bool
	Inline    []byte
	// Composed holds the compositions of the run's composed blocks, by
	// block hash (see BlockChange.Compose).
	Composed map[block.Hash]Composition
}

// SetAttrReq changes attributes; only the fields named in Valid are used.
type SetAttrReq struct {
	Valid uint32 // SetMode | SetUid | ...
	Mode  uint32 // permission bits (and setuid/setgid/sticky)
	Uid   uint32
	Gid   uint32
	Size  uint64 // truncate (the client rewrites a partial last block first)
	Atime int64
	Mtime int64
	Ctime int64 // 0: now
	// Sync: as CommitReq.Sync.
	Sync bool
}

// Bits of SetAttrReq.Valid.
const (
	SetMode uint32 = 1 << iota
	SetUid
	SetGid
	SetSize
	SetAtime
	SetMtime
	SetCtime
)

// CreateReq creates a regular file, device, FIFO or socket (Mode has the type
// bits), a directory (S_IFDIR) or a symlink (S_IFLNK with Target).
type CreateReq struct {
	Parent   Ino
	Name     string
	Mode     uint32
	Uid, Gid uint32
	Rdev     uint32
	Target   string
	Excl     bool // fail with ErrExist if the name exists; else return it
	// Open holds the inode it returns open for the calling session, as
	// HoldOpen does (open(2) with O_CREAT): release it with ReleaseOpen.
	Open bool
	// Tmpfile makes an unnamed regular file in Parent (open(O_TMPFILE)):
	// Name is not used, the inode starts with Nlink 0 as an orphan (Reap
	// it when its last opener is done), and Link may give it a name.
	Tmpfile bool
}

// Rename flags, as renameat2(2).
const (
	RenameNoReplace uint32 = 1 << 0
	RenameExchange  uint32 = 1 << 1
)

// DirEntry is one directory entry. With ReadDir's plus flag Inode is filled.
type DirEntry struct {
	Name  string
	Ino   Ino
	Mode  uint32 // type bits only, unless Inode is set
	Inode *Inode
}

// Xattr flags, as setxattr(2).
const (
	XattrCreate  uint32 = 1
	XattrReplace uint32 = 2
)

// StatFS is the file-system-wide usage the meta service tracks.
type StatFS struct {
	Files        uint64 // inodes in use
	LogicalBytes uint64 // sum of file sizes
}

// Server is one block server in the map.
type Server struct {
	ID    string // stable name, e.g. "b0"
	Addr  string // host:port of its HTTP endpoint
	Dir   string // data directory, for co-located short-circuit reads
	Host  string // failure domains
	Rack  string
	Site  string
	State string // "up", "down", "draining"
	Seen  int64  // unix ns of the latest heartbeat
}

// Server states. A server is up while it heartbeats, down once it has missed
// heartbeats for the meta service's down-after period, and draining when an
// operator asked for it to be emptied: it serves reads but takes no new
// blocks, and the mover copies its blocks away.
const (
	StateUp       = "up"
	StateDown     = "down"
	StateDraining = "draining"
)

// ServerMap is the block-server map; Epoch increases with every change of a
// member, a state or Replicas.
type ServerMap struct {
	Epoch    uint64
	Replicas int // the cluster's default replication factor (>= 1)
	Servers  []Server
}

// MoverProgress is the mover's latest report (DESIGN §3.2): how far the
// cluster is from every block having its R copies on its placement.
type MoverProgress struct {
	Round           uint64 // rounds completed
	At              int64  // unix ns of the report
	Running         bool   // a round is under way
	Blocks          int64  // live blocks seen in the last round
	UnderReplicated int64  // blocks with fewer live copies than their R
	Misplaced       int64  // blocks with a copy outside their placement
	BytesToMove     int64  // still to copy
	BytesMoved      int64  // copied in this round so far
	Err             string // the last round's error, if any
	// Lost counts the live blocks no listed server holds a good copy of
	// (corrupt copies are moved aside, so they do not count); LostBlocks
	// names the first MaxLostReported of them with their files.
	Lost       int64
	LostBlocks []LostBlock
	// UnderBySite counts, per site named by a per-site replication spec,
	// the blocks with fewer copies there than the spec asks for (sites
	// with none are left out; by site name; at most MaxSitesReported).
	UnderBySite []SiteCount
}

// SiteCount is a count for one site. In MoverProgress.UnderBySite it is the
// site's replication lag: N copies missing there, Bytes their size, and
// Since (unix ns) when the mover first saw the oldest of them missing (0:
// not known, e.g. a record written before it was kept).
type SiteCount struct {
	Site  string
	N     int64
	Bytes int64
	Since int64
}

// MaxSitesReported bounds MoverProgress.UnderBySite.
const MaxSitesReported = 64

// MaxLostReported bounds MoverProgress.LostBlocks, and MaxLostInodes the
// inodes named per lost block.
const (
	MaxLostReported = 16
	MaxLostInodes   = 8
)

// LostBlock is a block with no good copy left and the files (inodes) whose
// recipes name it.
type LostBlock struct {
	Hash block.Hash
	Inos []Ino
}
