package vfs

import (
	"context"
	"sync"
	"time"

	"tessera/internal/meta"
)

// The attribute cache (Options.AttrCache) is for front ends that name an
// inode on every call and have no cache of their own in front of this
// layer: an NFS server checks the handle of every LOOKUP, GETATTR, ACCESS
// and REMOVE (STALE or not, the caller's permission), where a FUSE mount's
// kernel answers the same from its attribute cache. It trusts the
// attributes the meta service gave for as long as a FUSE mount's kernel
// may: the policy's CacheTTL for regular files (0 under posix and the other
// coherent or uncached policies: never kept), Options.AttrTTL (1 s, FUSE's
// attribute timeout) for directories and special files. A regular file's
// are used besides only while the meta service calls this client back when
// another client changes the file: while it is open in the stateless I/O's
// shared handles, or when they were read under the client's session lease
// (each Lookup and GetAttr grants one) that the client still holds
// unbroken (client.LeaseMark: the same mark, and the callback stream alive,
// from before the read to the use). The meta service's callbacks reach the
// cache through Invalidate (give it to client.Config.OnCallback: it runs
// before the callback is acknowledged, so before the change that caused
// it returns, for a Sync change). So a file changed or removed on another
// node is not answered from here after this client heard of it, and never
// later than the policy's TTL, as on a mount. What
// this FS changes is dropped at the change (the inode of a SetAttr, a
// link, an unlink, a commit...; an rmdir or a rename drops everything),
// and so is an inode another client changed when this client hears of it
// (Invalidate: the meta service's callbacks). A directory this FS added
// an entry to or removed one from keeps only what such a change leaves as
// it was, its identity and permissions, for IdentityCached (a lookup or a
// removal in it); GetAttrCached asks the meta service for the rest. Kept are
// the attributes as the meta service sent them (not the cache tier's,
// which may be a TTL old already); GetAttrCached applies
// client.Overlay at every use, so this client's own writes show.

// attrCacheMax bounds the inodes kept (about 300 bytes each; symlinks,
// whose targets may be 4 KiB, are not kept); past it the cache starts
// afresh.
const attrCacheMax = 1 << 15

// AttrCacheBytes bounds the memory of an FS's attribute cache
// (Options.AttrCache), for the memory bound a process reports.
const AttrCacheBytes = attrCacheMax * 320

type attrCache struct {
	mu sync.Mutex
	m  map[meta.Ino]cachedAttr
	// gen counts drops: a fill that began before one is not kept (it
	// may hold what the drop was for).
	gen uint64
}

type cachedAttr struct {
	in    meta.Inode
	until time.Time
	// ident: this FS changed the directory's entries since (its times,
	// size and link count changed): only its identity and permissions
	// (Gen, Mode, Uid, Gid) still hold (IdentityCached).
	ident bool
	// mark, called: the client's LeaseMark before the fill.
	mark   uint64
	called bool
}

// fill is what a fill of the cache started at: the cache's generation and
// the client's LeaseMark.
type fill struct {
	gen    uint64
	mark   uint64
	called bool
}

// begin returns what a fill starts at.
func (v *FS) begin() fill {
	v.attrs.mu.Lock()
	gen := v.attrs.gen
	v.attrs.mu.Unlock()
	mark, called := v.c.LeaseMark()
	return fill{gen: gen, mark: mark, called: called}
}

// get returns ino's entry if kept and still good at now.
func (a *attrCache) get(ino meta.Ino, now time.Time) (cachedAttr, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	e, ok := a.m[ino]
	if !ok || !now.Before(e.until) {
		return cachedAttr{}, false
	}
	return e, true
}

// put keeps in until until, unless something was dropped since f began.
func (a *attrCache) put(f fill, in meta.Inode, until time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.gen != f.gen {
		return
	}
	if a.m == nil || len(a.m) >= attrCacheMax {
		a.m = make(map[meta.Ino]cachedAttr)
	}
	a.m[in.Ino] = cachedAttr{in: in, until: until, mark: f.mark, called: f.called}
}

// drop forgets inos.
func (a *attrCache) drop(inos ...meta.Ino) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.gen++
	for _, ino := range inos {
		delete(a.m, ino)
	}
}

// entriesChanged keeps of dirs only their identity and permissions.
func (a *attrCache) entriesChanged(dirs ...meta.Ino) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.gen++
	for _, d := range dirs {
		if e, ok := a.m[d]; ok {
			e.ident = true
			a.m[d] = e
		}
	}
}

// dropAll forgets everything.
func (a *attrCache) dropAll() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.gen++
	a.m = nil
}

// attrTTL is how long in's attributes may be trusted (see above).
func (v *FS) attrTTL(in *meta.Inode) time.Duration {
	if in.IsRegular() {
		return v.c.CacheTTL(in)
	}
	return v.opts.AttrTTL
}

// keep records in, fetched from the meta service by fill f.
func (v *FS) keep(f fill, in meta.Inode) {
	if !v.opts.AttrCache || in.Ino == 0 || in.Target != "" || in.IsRegular() && !f.called && !v.leased(in.Ino) {
		return
	}
	if ttl := v.attrTTL(&in); ttl > 0 {
		v.attrs.put(f, in, v.opts.Clock.Now().Add(ttl))
	}
}

// leased reports whether regular file ino is open in the stateless I/O's
// shared handles: its client holds it open with the meta service, whose
// callbacks say when another client changes it (Invalidate).
func (v *FS) leased(ino meta.Ino) bool {
	v.open.mu.Lock()
	defer v.open.mu.Unlock()
	return v.open.m[ino] != nil
}

// cached returns what the cache keeps of ino (see attrCache.get) and
// whether it is whole (not only its identity and permissions); a regular
// file's only while callbacks tell of its changes: open here, or read
// under the session lease the client still holds (client.LeaseMark).
func (v *FS) cached(ino meta.Ino) (in meta.Inode, ok, whole bool) {
	e, ok := v.attrs.get(ino, v.opts.Clock.Now())
	if !ok {
		return meta.Inode{}, false, false
	}
	if e.in.IsRegular() && !v.called(e) && !v.leased(ino) {
		return meta.Inode{}, false, false
	}
	return e.in, true, !e.ident
}

// called reports whether e was read under the session lease the client
// still holds, unbroken since.
func (v *FS) called(e cachedAttr) bool {
	if !e.called {
		return false
	}
	mark, ok := v.c.LeaseMark()
	return ok && mark == e.mark
}

// changed drops what the cache keeps of inos: this FS changed them.
func (v *FS) changed(inos ...meta.Ino) {
	if v.opts.AttrCache {
		v.attrs.drop(inos...)
	}
}

// entriesChanged notes that this FS added or removed entries of dirs
// (not a directory's own removal or rename: changedAll): their times,
// size and link count changed, their identity and permissions did not.
func (v *FS) entriesChanged(dirs ...meta.Ino) {
	if v.opts.AttrCache {
		v.attrs.entriesChanged(dirs...)
	}
}

// changedAll drops the whole cache (a change whose inodes are not all
// known: an rmdir, a rename).
func (v *FS) changedAll() {
	if v.opts.AttrCache {
		v.attrs.dropAll()
	}
}

// Invalidate forgets what the attribute cache keeps of ino: another client
// changed it. It does not block: give it to client.Config.OnCallback
// (through an Invalidations made before the FS), so that it runs before the
// callback is acknowledged.
func (v *FS) Invalidate(ino meta.Ino) { v.changed(ino) }

// GetAttrCached is GetAttr answered from the attribute cache while the
// attributes kept may be trusted (see above); without Options.AttrCache it
// is GetAttr.
func (v *FS) GetAttrCached(ctx context.Context, ino meta.Ino) (meta.Inode, error) {
	if !v.opts.AttrCache {
		return v.GetAttr(ctx, ino)
	}
	if in, ok, whole := v.cached(ino); ok && whole {
		v.Overlay(&in)
		return in, nil
	}
	return v.GetAttr(ctx, ino)
}

// IdentityCached is GetAttrCached for a check of ino's identity and
// permissions only (its generation, link count above 0, type, mode,
// owner and group: a handle's, a directory's for a lookup or a removal in
// it), also answered from attributes whose times and size this FS has
// changed since by adding or removing entries of the directory. whole
// reports whether the rest of in is current too.
func (v *FS) IdentityCached(ctx context.Context, ino meta.Ino) (in meta.Inode, whole bool, err error) {
	if v.opts.AttrCache {
		if in, ok, whole := v.cached(ino); ok {
			if whole {
				v.Overlay(&in)
			}
			return in, whole, nil
		}
	}
	in, err = v.GetAttr(ctx, ino)
	return in, err == nil, err
}
