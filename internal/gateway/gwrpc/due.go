package gwrpc

import (
	"context"
	"errors"
	"sync"
	"time"

	"tessera/internal/gateway"
	"tessera/internal/meta"
)

// errNoReadCounts: the meta client given to NewRouter takes no read counts.
var errNoReadCounts = errors.New("the meta client takes no fileset read counts")

// errNoSettings: the meta client given to NewRouter reads no filesets.
var errNoSettings = errors.New("the meta client reads no fileset settings")

// settingsTTL is how long a Router trusts a fileset's settings it read
// (its validity lag and mode): a changed lag is seen by mounts this much
// later at most.
const settingsTTL = 5 * time.Second

// filesetSettings caches each fileset's settings for Due.
type filesetSettings struct {
	mu sync.Mutex
	m  map[meta.Ino]cachedFileset
}

type cachedFileset struct {
	f    meta.Fileset
	read time.Time
}

// Due reports whether a cached fileset inode may need revalidation, so
// that a mount asks the owner gateway (a network round trip, and two meta
// calls there) only once the fileset's validity lag has passed since the
// inode was last validated, not on every open (Panache: revalidation is
// lazy, per validity interval). It answers true when it cannot tell: the
// gateway then decides as before.
func (r *Router) Due(ctx context.Context, in *meta.Inode) bool {
	if in == nil || in.Gateway == nil {
		return true
	}
	f, ok := r.filesetOf(ctx, in.Gateway.Fileset)
	if !ok {
		return true
	}
	return gateway.RevalidationDue(in.Ino, in.Gateway, f, r.now())
}

// filesetOf returns the settings of the fileset rooted at root, read from
// the meta service at most every settingsTTL.
func (r *Router) filesetOf(ctx context.Context, root meta.Ino) (meta.Fileset, bool) {
	fa, ok := r.meta.(meta.FilesetAPI)
	if !ok {
		return meta.Fileset{}, false
	}
	now := r.now()
	r.settings.mu.Lock()
	c, hit := r.settings.m[root]
	r.settings.mu.Unlock()
	if hit && now.Sub(c.read) < settingsTTL {
		return c.f, true
	}
	f, err := fa.Fileset(ctx, root)
	if err != nil {
		return meta.Fileset{}, false
	}
	r.settings.mu.Lock()
	if r.settings.m == nil {
		r.settings.m = map[meta.Ino]cachedFileset{}
	}
	r.settings.m[root] = cachedFileset{f: f, read: now}
	r.settings.mu.Unlock()
	return f, true
}

// AddFilesetReads passes a mount's read counts of a fileset to the meta
// service (meta.FilesetReadsAPI; the mount's hit ratio for `tessera
// fileset status`).
func (r *Router) AddFilesetReads(ctx context.Context, root meta.Ino, d meta.FilesetReads) error {
	ra, ok := r.meta.(meta.FilesetReadsAPI)
	if !ok {
		return errNoReadCounts
	}
	return ra.AddFilesetReads(ctx, root, d)
}

// Fileset returns the settings of the fileset rooted at root
// (meta.FilesetAPI), as Due caches them: a mount asks it for the mode, to
// refuse updates in a read-only fileset before anything is fetched.
func (r *Router) Fileset(ctx context.Context, root meta.Ino) (meta.Fileset, error) {
	if _, ok := r.meta.(meta.FilesetAPI); !ok {
		return meta.Fileset{}, errNoSettings
	}
	if f, ok := r.filesetOf(ctx, root); ok {
		return f, nil
	}
	// Not cached and not read: ask again for the error (ErrNotFound for
	// a fileset deleted).
	return r.meta.(meta.FilesetAPI).Fileset(ctx, root)
}
