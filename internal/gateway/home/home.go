package home

import (
	"context"
	"io"
	"time"
)

// Kind is what a path names.
type Kind uint8

// The kinds of entries a home holds.
const (
	KindFile Kind = iota + 1
	KindDir
	KindSymlink
)

// String names the kind.
func (k Kind) String() string {
	switch k {
	case KindFile:
		return "file"
	case KindDir:
		return "dir"
	case KindSymlink:
		return "symlink"
	}
	return "unknown"
}

// Attr are an entry's attributes as the home reports them.
type Attr struct {
	// Name is the entry's last path component ("" for the root).
	Name string
	Kind Kind
	// Mode holds the permission bits (0o7777); 0 where the store has none
	// (S3), and the gateway then uses its defaults.
	Mode uint32
	Size int64
	// Mtime is the last content change; Ctime the last change of content
	// or attributes, zero where the store has none (S3).
	Mtime, Ctime time.Time
	// Token changes whenever content or attributes change (see the
	// package comment); compare it for equality only.
	Token string
	// Target is a symlink's target, when the store returns it with the
	// attributes (file://, tessera:// in ReadDir and Stat).
	Target string
}

// Store is one home. Paths and errors are as the package comment says.
type Store interface {
	// Stat returns the attributes of path, not following a final symlink.
	Stat(ctx context.Context, path string) (Attr, error)
	// ReadDir lists a directory with the attributes of every entry, in
	// name order.
	ReadDir(ctx context.Context, path string) ([]Attr, error)
	// ReadAt reads len(p) bytes of a file from off; at the file's end it
	// returns fewer bytes and io.EOF, as io.ReaderAt.
	ReadAt(ctx context.Context, path string, p []byte, off int64) (int, error)
	// WriteFile replaces (or creates) a file whole with size bytes from r,
	// atomically; mode is used when it creates the file (0: 0o644).
	WriteFile(ctx context.Context, path string, r io.Reader, size int64, mode uint32) (Attr, error)
	// WriteAt writes p at off into an existing file, extending it (with
	// zeros over any gap) as needed.
	WriteAt(ctx context.Context, path string, p []byte, off int64) error
	// Truncate sets an existing file's size, cutting it or extending it
	// with zeros.
	Truncate(ctx context.Context, path string, size int64) error
	// Create makes an empty file; ErrExist if path exists.
	Create(ctx context.Context, path string, mode uint32) error
	// Mkdir makes a directory; ErrExist if path exists. Its parent must
	// exist (ErrNotFound otherwise).
	Mkdir(ctx context.Context, path string, mode uint32) error
	// Remove removes a file or symlink; ErrIsDir for a directory.
	Remove(ctx context.Context, path string) error
	// Rmdir removes an empty directory: ErrNotEmpty if it has entries,
	// ErrNotDir if it is not one.
	Rmdir(ctx context.Context, path string) error
	// Rename moves from to to, replacing a file (or an empty directory,
	// where the store has directories of its own) at to. Atomic except on
	// s3:// (see the package comment).
	Rename(ctx context.Context, from, to string) error
	// Close releases the store's connections.
	Close() error
}

// Symlinker is implemented by stores with symlinks (file://, tessera://).
// Without it the gateway refuses symlinks in the fileset with
// ErrUnsupported.
type Symlinker interface {
	Symlink(ctx context.Context, target, path string) error
	Readlink(ctx context.Context, path string) (string, error)
}

// Setattrer is implemented by stores that keep modes and times (file://,
// tessera://). Without it the gateway keeps them in the cache only.
type Setattrer interface {
	// Chmod sets the permission bits.
	Chmod(ctx context.Context, path string, mode uint32) error
	// Chtimes sets the access and modification times; a zero time is left
	// as it is.
	Chtimes(ctx context.Context, path string, atime, mtime time.Time) error
}

// KindStater is implemented by stores where knowing what a path was makes
// its Stat cheaper (s3://: a directory is a marker object, found in one
// request when looked for first). Revalidation uses it: it knows what
// each cached inode was.
type KindStater interface {
	// StatKind is Stat of a path last seen as kind was (0: not known):
	// the same answer, unless another tool made both a file and a
	// directory of that name, where the kind asked for wins.
	StatKind(ctx context.Context, path string, was Kind) (Attr, error)
}
