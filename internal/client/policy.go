package client

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"tessera/internal/meta"
	"tessera/internal/policy"
)

// OpenMode says how the kernel may cache an open file's pages.
type OpenMode struct {
	// KeepCache: the pages cached from an earlier open are still good
	// (FOPEN_KEEP_CACHE).
	KeepCache bool
	// DirectIO: every read and write of this handle must reach the client
	// (FOPEN_DIRECT_IO): the policy keeps no kernel page cache, or the
	// handle reads synchronized (O_RSYNC).
	DirectIO bool
}

// PolicyFor returns the consistency policy of an inode whose own policy
// name is name: that policy, else the mount's default (Config.Policy), else
// policy.Default. A name no preset knows (an inode written by a newer
// version) falls back the same way.
func (c *Client) PolicyFor(name string) policy.Policy {
	if p, ok := c.policies[name]; ok {
		return p // every operation asks: no lookup, no allocation
	}
	for _, n := range []string{name, c.cfg.Policy, policy.Default} {
		if n == "" {
			continue
		}
		if p, err := policy.Lookup(n); err == nil {
			return p
		}
	}
	p, _ := policy.Lookup(policy.Default)
	return p
}

// policyTable maps the presets' names, and "" (no policy of the inode's
// own), to the policies PolicyFor returns for them.
func policyTable(mountDefault string) map[string]policy.Policy {
	m := make(map[string]policy.Policy)
	for _, p := range policy.All() {
		m[p.Name()] = p
	}
	for _, n := range []string{mountDefault, policy.Default} {
		if p, ok := m[n]; ok {
			m[""] = p
			break
		}
	}
	return m
}

// CacheTTL is how long the kernel may cache an inode's attributes and
// entry under its policy: 0 for no cache and for coherent policies (their
// reads bypass the kernel, and a stat asks the client), the TTL for timed
// caches, an hour for write-once files.
func (c *Client) CacheTTL(in *meta.Inode) time.Duration { return c.cacheTTL(in.Policy) }

// cacheTTL is CacheTTL of an inode whose own policy name is policyName.
func (c *Client) cacheTTL(policyName string) time.Duration {
	k := c.PolicyFor(policyName).Knobs()
	switch k.Cache {
	case policy.CacheTimed:
		return k.CacheTTL
	case policy.CacheForever:
		return time.Hour
	}
	return 0
}

// openMode decides the kernel caching of a handle opened with flags on an
// inode at change counter `change`.
func (c *Client) openMode(ino meta.Ino, change uint64, k policy.Knobs, flags int) OpenMode {
	c.mu.Lock()
	defer c.mu.Unlock()
	unchanged := c.mu.seen[ino] == change && change != 0
	c.mu.seen[ino] = change
	m := OpenMode{KeepCache: unchanged}
	switch {
	case k.Cache == policy.CacheNone, k.Cache == policy.CacheCoherent:
		// Coherent policies keep their caches in the client, where a
		// callback drops them before it is acknowledged; the kernel's page
		// cache could only be dropped asynchronously.
		m = OpenMode{DirectIO: true}
	case flags&syscall.O_RSYNC == syscall.O_RSYNC:
		m = OpenMode{DirectIO: true}
	case k.Cache == policy.CacheForever:
		m.KeepCache = change != 0
	}
	return m
}

// handleFile is the policy.File view of a handle that hooks act on.
type handleFile struct{ h *Handle }

var _ policy.File = handleFile{}

func (hf handleFile) Ino() uint64 { return uint64(hf.h.f.ino) }
func (hf handleFile) Size() int64 { return hf.h.Size() }
func (hf handleFile) Dirty() int  { return hf.h.f.writesSinceCommit() }
func (hf handleFile) Committed() bool {
	f := hf.h.f
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.committedSize > 0
}

// Commit commits the file's buffered writes, waiting for every replica when
// the handle's durability asks for all of them (O_SYNC, O_DSYNC).
func (hf handleFile) Commit(ctx context.Context) error {
	h := hf.h
	all := h.policy().Knobs().DurabilityFor(h.flags, false) == policy.DurableAll
	return h.commit(ctx, all)
}

// Revalidate fetches the inode's attributes from the meta service and drops
// the cached recipe if the file changed. Attributes fetched by this
// handle's open count as its revalidation (the open asked the meta service
// already).
func (hf handleFile) Revalidate(ctx context.Context) error {
	h := hf.h
	h.mu.Lock()
	fresh := h.fresh
	h.fresh = false
	h.mu.Unlock()
	if fresh {
		return nil
	}
	return h.f.revalidate(ctx)
}

// revalidate adopts the meta service's current attributes and recipe.
func (f *file) revalidate(ctx context.Context) error {
	mark := f.c.called.mark()
	in, err := f.c.api.GetAttr(ctx, f.ino)
	if err != nil {
		return fmt.Errorf("revalidate inode %d: %w", f.ino, err)
	}
	f.adopt(in, mark)
	return nil
}

// writesSinceCommit is the number of writes not yet committed.
func (f *file) writesSinceCommit() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.writes
}

// policy returns the handle's current policy: the file's own may change
// while it is open (a setxattr, or a change seen from another client).
func (h *Handle) policy() policy.Policy {
	f := h.f
	f.mu.Lock()
	name := f.policyName
	f.mu.Unlock()
	return f.c.PolicyFor(name)
}

// op is the policy.Op of an operation of h on [off, off+n).
func (h *Handle) op(off, n int64) policy.Op { return policy.Op{Flags: h.flags, Off: off, Len: n} }
