package client

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"

	"tessera/internal/block"
	"tessera/internal/meta"
	"tessera/internal/placement"
	"tessera/internal/policy"
)

// specOf returns the replication spec of a file: its per-site spec, else
// its number of copies (the zero Spec: the cluster's default). A stored
// site spec always parses (the meta service checks it); should one not, the
// file's number of copies still holds.
func specOf(a meta.Attr) placement.Spec {
	if a.Sites != "" {
		if sp, err := placement.ParseSpec(a.Sites); err == nil {
			return sp
		}
	}
	return placement.Copies(int(a.Replicas))
}

// Nearby reads (issue 13, rNFS §2). A client with a site (Config.Site)
// asks for a block: copies on this host, then the servers of its own site
// (rendezvous within the site, spread over its racks and hosts, which is
// where writers put the site's copies: placement.InGroup, Spread), then
// each other site in order of its measured request time (the fastest
// server's moving average, lane.rtt; sites not measured yet come last, by
// name), then any server left. A block replicated to the client's site is
// thus read without crossing a WAN link; one that is not is read from the
// nearest site that has it, at the cost of a miss per site before it.

// rankedBySiteLocked is ranked for a client with a site; r.mu is held.
func (r *router) rankedBySiteLocked(h block.Hash) []rankedStore {
	ids := placement.Pick(h, r.mu.ids, len(r.mu.ids))
	up := placement.Pick(h, r.mu.up, len(r.mu.up))
	out := make([]rankedStore, 0, len(ids))
	seen := make(map[string]bool, len(ids))
	add := func(id string) {
		if r.mu.servers[id].State == meta.StateDown || seen[id] {
			return
		}
		seen[id] = true
		st := r.mu.stores[id]
		out = append(out, rankedStore{id: id, st: st, local: isLocal(st), lane: r.mu.lanes[id]})
	}
	for _, id := range ids {
		if isLocal(r.mu.stores[id]) {
			add(id)
		}
	}
	addSite := func(site string) {
		g := placement.Group{Site: site}
		in := placement.InGroup(up, r.domainLocked, g)
		for _, id := range placement.Spread(in, r.domainLocked, len(in)) {
			add(id)
		}
		for _, id := range placement.InGroup(ids, r.domainLocked, g) {
			add(id) // draining servers of the site still serve reads
		}
	}
	addSite(r.site)
	for _, site := range r.sitesByRTTLocked() {
		if site != r.site {
			addSite(site)
		}
	}
	for _, id := range ids {
		add(id)
	}
	return out
}

// sitesByRTTLocked returns the sites of the map, nearest first: by the
// lowest moving-average request time of their servers; unmeasured sites
// last, by name.
func (r *router) sitesByRTTLocked() []string {
	best := map[string]int64{}
	for _, id := range r.mu.ids {
		site := r.mu.servers[id].Site
		rtt := r.mu.lanes[id].rtt.Load()
		if cur, ok := best[site]; !ok || rtt > 0 && (cur == 0 || rtt < cur) {
			best[site] = rtt
		}
	}
	sites := make([]string, 0, len(best))
	for site := range best {
		sites = append(sites, site)
	}
	slices.SortFunc(sites, func(a, b string) int {
		ra, rb := best[a], best[b]
		switch {
		case ra == rb:
			return strings.Compare(a, b)
		case ra == 0:
			return 1
		case rb == 0:
			return -1
		}
		return cmp.Compare(ra, rb)
	})
	return sites
}

// measured folds the time of one answered request into l.rtt (a moving
// average over about eight requests).
func (l *lane) measured(d time.Duration) {
	for {
		old := l.rtt.Load()
		next := int64(d)
		if old > 0 {
			next = old - old/8 + int64(d)/8
		}
		if next <= 0 {
			next = 1
		}
		if l.rtt.CompareAndSwap(old, next) {
			return
		}
	}
}

// readContext marks ctx so that the read-only meta calls of a read (recipe
// windows, revalidations) may be served by a serializable read of the meta
// service's nearest store replica, when the file's policy allows it and
// the handle does not read synchronized (policy.Knobs.SerializableFor:
// session, nfs and relaxed yes; posix and O_RSYNC no).
func readContext(ctx context.Context, p policy.Policy, flags int) context.Context {
	if p.Knobs().SerializableFor(flags) {
		return meta.AllowSerializable(ctx)
	}
	return ctx
}

// nearbyMeta is the meta API the FUSE layer gets (Client.Meta) when the
// mount's default policy allows serializable meta reads: its read-only
// namespace calls (lookups, stats, directory listings, xattrs) carry the
// mark. A file with a stricter policy of its own is still read linearizable
// through its handles (readContext).
type nearbyMeta struct{ meta.API }

func (m nearbyMeta) Lookup(ctx context.Context, parent meta.Ino, name string) (meta.Inode, error) {
	return m.API.Lookup(meta.AllowSerializable(ctx), parent, name)
}

func (m nearbyMeta) GetAttr(ctx context.Context, ino meta.Ino) (meta.Inode, error) {
	return m.API.GetAttr(meta.AllowSerializable(ctx), ino)
}

func (m nearbyMeta) ReadDir(ctx context.Context, dir meta.Ino, after string, limit int, plus bool) ([]meta.DirEntry, bool, error) {
	return m.API.ReadDir(meta.AllowSerializable(ctx), dir, after, limit, plus)
}

func (m nearbyMeta) GetXattr(ctx context.Context, ino meta.Ino, name string) ([]byte, error) {
	return m.API.GetXattr(meta.AllowSerializable(ctx), ino, name)
}

func (m nearbyMeta) ListXattr(ctx context.Context, ino meta.Ino) ([]string, error) {
	return m.API.ListXattr(meta.AllowSerializable(ctx), ino)
}

// nearbyTierMeta is nearbyMeta over a client with a cache tier: the FUSE
// layer's cached stats (CachedLookup, CachedGetAttr) carry the mark too.
type nearbyTierMeta struct {
	nearbyMeta
	t *tierAPI
}

func (m nearbyTierMeta) CachedLookup(ctx context.Context, parent meta.Ino, name string) (meta.Inode, error) {
	return m.t.CachedLookup(meta.AllowSerializable(ctx), parent, name)
}

func (m nearbyTierMeta) CachedGetAttr(ctx context.Context, ino meta.Ino) (meta.Inode, error) {
	return m.t.CachedGetAttr(meta.AllowSerializable(ctx), ino)
}
