package vfs

import (
	"context"
	"log/slog"
	"syscall"
	"time"

	"tessera/internal/client"
	"tessera/internal/clock"
	"tessera/internal/meta"
	"tessera/internal/meta/metawait"
	"tessera/internal/ratelog"
)

// Options tune an FS.
type Options struct {
	Logger *slog.Logger
	// IdleRelease is how long a handle of the stateless I/O (ReadAt,
	// WriteAt) stays open after its last use (default 5 s).
	IdleRelease time.Duration
	// Clock times the idle release (default the machine's).
	Clock clock.Clock
	// Gateway, if set, is asked to list fileset directories and fetch
	// fileset files not cached yet, before they are served (fileset.go).
	Gateway Gateway
	// ReadOnly refuses an open for writing and a create with EROFS: for
	// an identity that may not change the namespace (client-ro), whose
	// writes the meta service would refuse only at the commit
	// (readonly.go).
	ReadOnly bool
	// AttrCache keeps the attributes fetched from the meta service for
	// GetAttrCached, as long as a FUSE mount's kernel may cache them
	// (attrcache.go): for a front end with no cache of its own (NFS).
	AttrCache bool
	// AttrTTL is how long AttrCache trusts the attributes of anything
	// but a regular file (default 1 s, FUSE's attribute timeout).
	AttrTTL time.Duration
}

// FS is the file system of one client, by inode.
type FS struct {
	c    *client.Client
	api  meta.API
	log  *slog.Logger
	opts Options
	open openTable // io.go

	handles handles    // open files and directories (files.go, dirs.go)
	ready   ready      // inodes that need no gateway (fileset.go)
	names   names      // inodes of names seen last, hints for unlink (names.go)
	reads   readCounts // bytes read from filesets, to report (filesetreads.go)
	modes   modes      // modes of the filesets met (readonly.go)
	attrs   attrCache  // Options.AttrCache (attrcache.go)
	// homeLog keeps home down from logging every refused request.
	homeLog ratelog.Limiter
}

// New returns the file system of c.
func New(c *client.Client, opts Options) *FS {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.IdleRelease <= 0 {
		opts.IdleRelease = 5 * time.Second
	}
	if opts.AttrTTL <= 0 {
		opts.AttrTTL = time.Second
	}
	opts.Clock = clock.Or(opts.Clock)
	v := &FS{c: c, api: c.Meta(), log: opts.Logger, opts: opts}
	v.open.init()
	v.handles.init()
	return v
}

// Client is the client the FS serves.
func (v *FS) Client() *client.Client { return v.c }

// cachedStat is implemented by a client's meta API with a cache tier: the
// stats of LOOKUP and GETATTR may be answered from it (client.tierAPI).
type cachedStat interface {
	CachedLookup(ctx context.Context, parent meta.Ino, name string) (meta.Inode, error)
	CachedGetAttr(ctx context.Context, ino meta.Ino) (meta.Inode, error)
}

// GetAttr returns ino's attributes as this client sees them (Overlay). An
// open file whose policy serves cached data answers from what the client
// has while the meta service is unavailable (client.StatFallback). No
// permission is needed.
func (v *FS) GetAttr(ctx context.Context, ino meta.Ino) (meta.Inode, error) {
	fallback, canFall := v.c.StatFallback(ino)
	if canFall {
		ctx = metawait.NoWait(ctx)
	}
	f := v.begin()
	var in meta.Inode
	var err error
	cs, tier := v.api.(cachedStat)
	if tier {
		in, err = cs.CachedGetAttr(ctx, ino)
	} else {
		in, err = v.api.GetAttr(ctx, ino)
	}
	switch {
	case err != nil && canFall && meta.Unavailable(err):
		in, err = fallback, nil
	case err == nil && !tier:
		v.keep(f, in) // (the tier's answer may be a TTL old already)
	}
	if err != nil {
		return meta.Inode{}, err
	}
	v.Overlay(&in)
	return in, nil
}

// dir returns directory ino's attributes from the meta service, after
// checking that c may access it as mask asks (ENOTDIR if it is none).
func (v *FS) dir(ctx context.Context, c Cred, op string, ino meta.Ino, mask uint32) (meta.Inode, error) {
	if c.Checked {
		return meta.Inode{}, nil
	}
	d, ok := fresh(ctx, ino)
	if !ok {
		var err error
		if d, err = v.api.GetAttr(ctx, ino); err != nil {
			return d, err
		}
	}
	if !d.IsDir() {
		return d, errorf(op, ino, errNotDir)
	}
	return d, check(c, op, &d.Attr, mask)
}

type freshKey struct{}

// WithFresh returns ctx carrying f, which gives the attributes of inodes
// that the caller fetched from the meta service during the call under way
// (nothing changed since): the permission checks of directories and of
// SetAttr use them instead of asking again. For one call of a front end that has just
// fetched them (NFS: the handle's directory), never longer.
func WithFresh(ctx context.Context, f func(meta.Ino) (meta.Inode, bool)) context.Context {
	return context.WithValue(ctx, freshKey{}, f)
}

// fresh returns what ctx's WithFresh knows of ino.
func fresh(ctx context.Context, ino meta.Ino) (meta.Inode, bool) {
	if f, ok := ctx.Value(freshKey{}).(func(meta.Ino) (meta.Inode, bool)); ok {
		return f(ino)
	}
	return meta.Inode{}, false
}

// Lookup returns the entry name of directory parent (search permission
// on parent needed).
func (v *FS) Lookup(ctx context.Context, c Cred, parent meta.Ino, name string) (meta.Inode, error) {
	if _, err := v.dir(ctx, c, "lookup", parent, MayExec); err != nil {
		return meta.Inode{}, err
	}
	f := v.begin()
	var in meta.Inode
	var err error
	cs, tier := v.api.(cachedStat)
	if tier {
		in, err = cs.CachedLookup(ctx, parent, name)
	} else {
		in, err = v.api.Lookup(ctx, parent, name)
	}
	if err != nil {
		return meta.Inode{}, err
	}
	if !tier {
		v.keep(f, in)
	}
	v.names.put(parent, name, in.Ino, in.Mode)
	v.Overlay(&in)
	return in, nil
}

// Access checks that c may access ino as mask (MayRead|MayWrite|MayExec)
// asks; EACCES if not, and before that EROFS for MayWrite of a file that may not be
// written whoever asks (ReadOnlyAt: an identity that may only read, a
// read-only fileset). It checks also for a Checked caller (access(2)
// asks exactly this), with the caller's uid and groups.
func (v *FS) Access(ctx context.Context, c Cred, ino meta.Ino, mask uint32) (meta.Inode, error) {
	in, err := v.api.GetAttr(ctx, ino)
	if err != nil {
		return in, err
	}
	c.Checked = false
	if mask&MayWrite != 0 && v.ReadOnlyAt(ctx, &in) {
		// First, as Linux's inode_permission checks.
		return in, errorf("access", ino, syscall.EROFS)
	}
	return in, check(c, "access", &in.Attr, mask)
}

// Readlink returns symlink ino's target (EINVAL for anything else).
func (v *FS) Readlink(ctx context.Context, ino meta.Ino) (string, error) {
	in, err := v.api.GetAttr(ctx, ino)
	if err != nil {
		return "", err
	}
	if !isSymlink(&in.Attr) {
		return "", errorf("readlink", ino, errNotLink)
	}
	return in.Target, nil
}

// StatFS is the room for new data and inodes (client.Space; see fuse's
// StatFs for the nominal values without an answer).
type StatFS struct {
	Bsize              uint32
	Blocks, Bfree      uint64
	Bavail             uint64 // of Bfree, what a write may still use
	Files, Ffree       uint64
	NameLen            uint32
	LogicalBytes, Used uint64
}

// StatFS reports the block servers' room divided by the replicas, or
// nominal totals (1 PiB, 1 G inodes) without an answer from any server.
func (v *FS) StatFS(ctx context.Context) (StatFS, error) {
	st, err := v.api.StatFS(ctx)
	if err != nil {
		return StatFS{}, err
	}
	const bsize = 4096
	out := StatFS{Bsize: bsize, NameLen: meta.MaxNameLen, LogicalBytes: st.LogicalBytes}
	if free, size, err := v.c.Space(ctx); err == nil && size > 0 {
		out.Blocks = uint64(size) / bsize
		out.Bfree = min(uint64(free)/bsize, out.Blocks)
	} else {
		total := uint64(1<<50) / bsize
		used := (st.LogicalBytes + bsize - 1) / bsize
		out.Blocks = total
		out.Bfree = total - min(used, total)
	}
	out.Bavail = out.Bfree
	out.Files = 1 << 30
	out.Ffree = out.Files - min(st.Files, out.Files)
	return out, nil
}

// Sync makes every change acknowledged so far durable.
func (v *FS) Sync(ctx context.Context) error { return v.c.Sync(ctx) }
