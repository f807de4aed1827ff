package vfs

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"syscall"
	"time"

	"tessera/internal/meta"
)

// Read-only filesets (meta.ModeRO) refuse local updates with EROFS. The
// meta service is the authority: every namespace and content change is
// refused in its transaction (meta's write-back hook), for every front end
// alike. vfs checks too, before the two things the service cannot refuse
// in time: an open for writing (an open is not a change to the service,
// and the first change, the commit at close, would come after write(2)
// had said yes) and the fetch of a partly cached file that comes before a
// truncate or a write open (it would fill the cache only to be refused).
// See docs/design/2026-11-25-gateway-readonly.md.

// A client whose identity may only read (Options.ReadOnly; a FUSE mount
// of it is also read-only in the kernel) gets EROFS for an open that may
// write and a create (refuseWriteOpen), before anything else. The meta
// service refuses the identity's changes regardless (EACCES), but for a
// write that refusal came only at the commit, at fsync or close: "echo x
// >> f" exited 0 and the data was dropped.

// refuseWriteOpen returns EROFS for an open with flags that may write,
// by a client that may only read (Options.ReadOnly).
func (v *FS) refuseWriteOpen(op string, flags uint32) error {
	if v.opts.ReadOnly && (flags&syscall.O_ACCMODE != syscall.O_RDONLY || flags&syscall.O_TRUNC != 0) {
		return fmt.Errorf("%s: the mount's identity may only read: %w", op, meta.ErrReadOnly)
	}
	return nil
}

// filesetLookup is what can read a fileset's settings: meta.FilesetAPI's
// Fileset, offered by the Gateway (Group, Router) or the meta client.
type filesetLookup interface {
	Fileset(ctx context.Context, root meta.Ino) (meta.Fileset, error)
}

// modeTTL is how long vfs trusts the mode it read of a fileset. A
// fileset's mode does not change while it exists; a deleted one may still
// be taken as read-only for this long (the meta service no longer refuses
// its updates; vfs's refusal then is stale, never unsafe).
const modeTTL = 10 * time.Second

// modes caches the settings of the filesets met.
type modes struct {
	mu sync.Mutex
	m  map[meta.Ino]modeEntry // by fileset root
}

type modeEntry struct {
	f     meta.Fileset
	until time.Time
}

// refuseReadOnly returns an error wrapping meta.ErrReadOnly (EROFS) when
// in lies in a read-only fileset, before op changes it. An inode in no
// fileset, or one whose fileset's settings cannot be read, is left to the
// meta service's refusal.
func (v *FS) refuseReadOnly(ctx context.Context, op string, in *meta.Inode) error {
	if in == nil || in.Gateway == nil || in.Gateway.Fileset == 0 {
		return nil
	}
	root := in.Gateway.Fileset
	f, err := v.filesetOf(ctx, root)
	if err != nil {
		// Deleted (its inodes are ordinary ones now), or its settings
		// not readable: the meta service refuses what it must.
		if !errors.Is(err, meta.ErrNotFound) {
			v.log.Debug("fileset mode not read; the meta service decides", "op", op, "fileset", root, "err", err)
		}
		return nil
	}
	if f.Mode == meta.ModeRO {
		return fmt.Errorf("%s inode %d: fileset %d is read-only: %w", op, in.Ino, root, meta.ErrReadOnly)
	}
	return nil
}

// errNoLookup: neither the Gateway nor the meta client reads filesets.
var errNoLookup = errors.New("neither the gateway nor the meta client reads fileset settings")

// filesetOf returns the settings of the fileset rooted at root, from the
// cache while they are fresh.
func (v *FS) filesetOf(ctx context.Context, root meta.Ino) (meta.Fileset, error) {
	now := time.Now()
	v.modes.mu.Lock()
	e, ok := v.modes.m[root]
	v.modes.mu.Unlock()
	if ok && now.Before(e.until) {
		return e.f, nil
	}
	fl, ok := v.opts.Gateway.(filesetLookup)
	if !ok {
		if fl, ok = v.api.(filesetLookup); !ok {
			return meta.Fileset{}, errNoLookup
		}
	}
	f, err := fl.Fileset(ctx, root)
	if err != nil {
		return meta.Fileset{}, err
	}
	v.modes.mu.Lock()
	if v.modes.m == nil {
		v.modes.m = make(map[meta.Ino]modeEntry)
	}
	v.modes.m[root] = modeEntry{f: f, until: now.Add(modeTTL)}
	v.modes.mu.Unlock()
	return f, nil
}

// IdentityReadOnly reports whether this client's identity may only read
// (Options.ReadOnly): a front end refuses every change as a read-only file
// system's.
func (v *FS) IdentityReadOnly() bool { return v.opts.ReadOnly }

// ReadOnlyAt reports whether in may not be written as a read-only file
// system's file: the identity may only read, or in lies in a read-only
// fileset. Only a regular file, a directory or a symlink: writing a
// device, a FIFO or a socket changes nothing stored (access(2)'s EROFS,
// Linux's rule).
func (v *FS) ReadOnlyAt(ctx context.Context, in *meta.Inode) bool {
	switch in.Mode & syscall.S_IFMT {
	case syscall.S_IFREG, syscall.S_IFDIR, syscall.S_IFLNK:
	default:
		return false
	}
	return v.opts.ReadOnly || v.refuseReadOnly(ctx, "access", in) != nil
}
