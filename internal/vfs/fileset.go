package vfs

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"tessera/internal/meta"
)

// Gateway is what a mount asks when it meets a fileset inode that is not
// cached yet (package gateway; docs/design/2026-11-24-gateway.md): list a
// directory at home into placeholders, fetch the blocks of a file a read
// needs.
type Gateway interface {
	ListDir(ctx context.Context, dir meta.Ino) (meta.Inode, error)
	// Fetch makes [off, off+n) of file ino readable from the cache (its
	// blocks fetched from home and recorded in the inode's cached runs)
	// and returns the inode afterwards.
	Fetch(ctx context.Context, ino meta.Ino, off, n int64) (meta.Inode, error)
	// Revalidate compares ino with home once its fileset's validity lag
	// has passed, invalidating it if home changed (force: at once).
	Revalidate(ctx context.Context, ino meta.Ino, force bool) (bool, error)
}

// ready remembers the inodes found in no fileset, so that each costs one
// GetAttr per mount (an inode never joins a fileset: a fileset's root
// must be empty when it is made, and what is created under it is in it;
// renames across a fileset's border are refused). A file, symlink or
// special file this mount creates costs none: the meta service's reply to
// the create says where it is (noteCreated). A directory it creates is
// not noted: an admin may make it (empty) a fileset's root afterwards. A
// fileset inode is looked at every time, since revalidation can take it
// back from cached to placeholder. At most readyMax inodes are
// remembered: past that the set starts afresh (each inode then costs its
// GetAttr again).
type ready struct {
	m sync.Map
	n atomic.Int64 // entries stored since the last reset (approximately)
}

// readyMax bounds ready: 2^18 inodes, ~25 MiB of sync.Map at most.
const readyMax = 1 << 18

// add remembers ino as in no fileset.
func (r *ready) add(ino meta.Ino) {
	if _, loaded := r.m.LoadOrStore(ino, struct{}{}); !loaded && r.n.Add(1) > readyMax {
		r.m.Clear()
		r.n.Store(0)
	}
}

// noteCreated remembers in, an inode the meta service returned for a
// create, as in no fileset when it is a non-directory in none: the reply
// carries the inode's fileset (meta.Inode.Gateway), so the GetAttr Fill
// would make at its first open is saved (tar -d of an untarred tree:
// one meta call per file, issue 28).
func (v *FS) noteCreated(in *meta.Inode) {
	if v.opts.Gateway != nil && in.Ino != 0 && in.Gateway == nil && !in.IsDir() {
		v.ready.add(in.Ino)
	}
}

// dueChecker is implemented by a Gateway that can tell, without asking a
// gateway, that a cached inode's validity lag has not passed yet (gwrpc's
// Router: a network round trip saved per open of a cached file).
type dueChecker interface {
	Due(ctx context.Context, in *meta.Inode) bool
}

// needs reports whether in must go to the gateway before it is served.
func needs(in *meta.Inode) bool {
	return in.Gateway != nil && in.Gateway.State != meta.CacheCached
}

// Fill makes sure inode ino can be served when it belongs to a fileset:
// a cached one is revalidated once its validity lag has passed, a
// directory not listed yet is listed at home. A file is not fetched here:
// its reads fetch what they need (partial). It returns the inode of a
// fileset (nil for any other, or without a Gateway).
func (v *FS) Fill(ctx context.Context, ino meta.Ino) (*meta.Inode, error) {
	if v.opts.Gateway == nil {
		return nil, nil
	}
	if _, ok := v.ready.m.Load(ino); ok {
		return nil, nil
	}
	in, err := v.api.GetAttr(ctx, ino)
	if err != nil {
		return nil, err
	}
	if in.Gateway == nil {
		v.ready.add(ino)
		return nil, nil
	}
	if !needs(&in) || in.Gateway.State == meta.CachePartial {
		// Cached, whole or in part: compare with home once the validity
		// lag has passed (a partial file's next blocks must come from the
		// same version of home's file as those it holds). Home
		// unreachable is not an error here: what is cached is served
		// while home is down (Panache's disconnected mode).
		d, ok := v.opts.Gateway.(dueChecker)
		if ok && !d.Due(ctx, &in) {
			return &in, nil
		}
		var warmed chan struct{}
		if ok && in.IsRegular() && !needs(&in) {
			// The open waits for home (a WAN round trip); meanwhile the
			// blocks of the cached copy a reader reads first are fetched,
			// as its read-ahead would right after the open. Nothing is
			// served from them before the revalidation's answer, and a
			// file found changed gets a new recipe naming other blocks.
			warmed = make(chan struct{})
			go func() {
				defer close(warmed)
				if err := v.c.Warm(ctx, in); err != nil {
					v.log.Debug("warming the cached copy failed", "ino", ino, "err", err)
				}
			}()
		}
		changed, err := v.opts.Gateway.Revalidate(ctx, ino, false)
		if warmed != nil {
			<-warmed
		}
		if err != nil {
			v.log.Debug("revalidation failed; serving what is cached", "ino", ino, "err", err)
			return &in, nil
		}
		if !changed {
			return &in, nil
		}
		if in, err = v.api.GetAttr(ctx, ino); err != nil {
			return nil, err
		}
	}
	if needs(&in) && in.IsDir() {
		listed, err := v.opts.Gateway.ListDir(ctx, ino)
		if err != nil {
			if v.listPending(ctx, &in, err) { // homedown.go
				return &in, nil
			}
			return nil, v.homeFailed(ctx, "list", &in, err)
		}
		in = listed
	}
	return &in, nil
}

// complete fetches the whole of a fileset file in before it is changed
// locally: write-back sends a file whole, so a partly cached file must
// hold all of home's bytes before a write, truncate or fallocate lands in
// it (docs/design/2026-11-25-gateway-ranges.md).
func (v *FS) complete(ctx context.Context, in *meta.Inode) error {
	if in == nil || !needs(in) || !in.IsRegular() {
		return nil
	}
	if _, err := v.opts.Gateway.Fetch(ctx, in.Ino, 0, int64(in.Gateway.HomeSize)); err != nil {
		return v.homeFailed(ctx, "complete", in, err)
	}
	return nil
}

// partial is an open file of a fileset not cached whole: a read fetches
// the blocks it needs that are not cached yet (through the gateway) before
// the client reads them, since a block never fetched has no data in the
// file's recipe and would read as zeros.
type partial struct {
	ino meta.Ino
	bs  int64
	mu  sync.Mutex
	// sec is the section as this handle knows it: its Cached runs are
	// those recorded plus those this handle had fetched.
	sec meta.GatewayInfo
}

func newPartial(in *meta.Inode) *partial {
	bs := int64(in.BlockSize)
	if bs <= 0 {
		bs = 4 << 20
	}
	return &partial{ino: in.Ino, bs: bs, sec: *in.Gateway}
}

// holds reports whether blocks [first, end) are known cached.
func (p *partial) holds(first, end uint64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sec.Holds(first, end)
}

// learn merges what the meta service says of the file (g) and, if run
// is not empty, a run this handle had fetched. A section for another
// version of home's object (revalidated since) replaces what was known.
func (p *partial) learn(g *meta.GatewayInfo, run meta.BlockRange) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if g != nil {
		if g.Token != p.sec.Token || g.HomeMtime != p.sec.HomeMtime || g.HomeSize != p.sec.HomeSize || g.State != meta.CachePartial {
			p.sec = *g
		} else {
			for _, r := range g.Cached {
				p.sec.Cached = meta.AddRange(p.sec.Cached, r)
			}
		}
	}
	if run.End > run.First && p.sec.State != meta.CacheCached {
		p.sec.Cached = meta.AddRange(p.sec.Cached, run)
	}
}

// ready makes [off, off+n) of the file readable: nothing to do for cached
// blocks (a hit never involves a gateway), else the meta service is asked
// whether another reader or the prefetch has fetched them since, and the
// gateway only for what is still missing. A failed fetch is EIO: the read
// fails rather than return the recipe's zeros.
func (p *partial) ready(ctx context.Context, v *FS, off, n int64) (fetched bool, err error) {
	p.mu.Lock()
	size := int64(p.sec.HomeSize)
	p.mu.Unlock()
	if off >= size || n <= 0 {
		return false, nil
	}
	end := min(off+n, size)
	first, last := uint64(off/p.bs), uint64((end+p.bs-1)/p.bs)
	if p.holds(first, last) {
		return false, nil
	}
	in, err := v.api.GetAttr(ctx, p.ino)
	if err != nil {
		return false, err
	}
	// Whatever happens next, blocks were committed since this mount's
	// client may have read the file's recipe (zeros where uncached), by
	// a gateway's client, whose callback need not reach this one.
	defer v.changed(p.ino)
	defer v.c.Invalidate(p.ino)
	p.learn(in.Gateway, meta.BlockRange{})
	if in.Gateway == nil || p.holds(first, last) {
		return false, nil
	}
	out, err := v.opts.Gateway.Fetch(ctx, p.ino, int64(first)*p.bs, int64(last-first)*p.bs)
	if err != nil {
		return false, v.homeFailed(ctx, fmt.Sprintf("read [%d, %d)", off, end), &in, err)
	}
	p.learn(out.Gateway, meta.BlockRange{First: first, End: last})
	return true, nil
}

// beforeTruncate is the fileset rule of a truncate: refused in a
// read-only fileset, and a partly cached file is completed first.
func (v *FS) beforeTruncate(ctx context.Context, in *meta.Inode) (meta.Inode, error) {
	if err := v.refuseReadOnly(ctx, "truncate", in); err != nil {
		return meta.Inode{}, err
	}
	if !needs(in) {
		return *in, nil
	}
	if err := v.complete(ctx, in); err != nil {
		return meta.Inode{}, err
	}
	return v.api.GetAttr(ctx, in.Ino)
}
