package client

import (
	"context"

	"tessera/internal/meta"
	"tessera/internal/meta/metawait"
	"tessera/internal/policy"
)

// Meta service outages (docs/design/2026-11-24-meta-outage.md).
//
// Every meta call of the client and of the FUSE layer goes through a
// metawait.API around Config.Meta: a call that finds the service unavailable
// waits for it, as on an NFS hard mount, for Config.MetaTimeout, then fails
// with EIO; a request whose caller is dying ends the wait with EINTR (the
// same interrupts as the client's other waits, interrupt.go). What the
// client caches keeps serving where the file's policy allows it: reads of an
// open file under a timed or write-once cache (session, nfs, relaxed,
// immutable) go on from the cached recipe and blocks, while coherent and
// uncached policies (posix, forced, seq-nocache) wait for the service. When
// the service answers again, the poll loop polls at once; a session the
// service lost (it restarted) is replaced by a new one (callbacks.reopen),
// every open file's cached state is revalidated before use, and the
// uncommitted writes are committed, a conflict being redone as always.

// metaWait returns cfg.Meta waiting out outages as cfg says.
func metaWait(c *Client, cfg *Config) *metawait.API {
	return metawait.New(cfg.Meta, metawait.Options{
		Timeout:   cfg.MetaTimeout,
		Clock:     cfg.MetaClock,
		Interrupt: interruptWait,
		OnBack:    c.metaBack,
		Logger:    cfg.Logger,
	})
}

// interruptWait tells metawait how a request's interrupt reaches its waits:
// the channel closed on the kernel's INTERRUPT and whether the caller is
// dying (WithInterrupt).
func interruptWait(ctx context.Context) (<-chan struct{}, func() bool) {
	in, ok := interruptOf(ctx)
	if !ok {
		return nil, nil
	}
	return in.ch, in.dying
}

// servesCached reports whether files of the policy named policyName may
// serve what the client cached while the meta service is unavailable: those
// whose policy trusts a cache for a time or for ever.
func (c *Client) servesCached(policyName string) bool {
	switch c.PolicyFor(policyName).Knobs().Cache {
	case policy.CacheTimed, policy.CacheForever:
		return true
	}
	return false
}

// metaBack is called when the meta service answers again after an outage:
// the poll loop polls at once instead of finishing its backoff, so that a
// session the service lost is replaced without delay.
func (c *Client) metaBack() {
	select {
	case c.metaKick <- struct{}{}:
	default:
	}
}

// StatFallback returns what stands in for ino's attributes while the meta
// service is unavailable: for a file open here whose policy serves cached
// data and that no callback invalidated, the inode as last read (the FUSE
// layer overlays this client's uncommitted size and mtime); ok is false
// when the stat must wait for the service.
func (c *Client) StatFallback(ino meta.Ino) (in meta.Inode, ok bool) {
	c.mu.Lock()
	f := c.mu.files[ino]
	c.mu.Unlock()
	if f == nil {
		return meta.Inode{}, false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.drainLocked()
	if !f.loaded || f.stale || f.attr.Ino != ino || !c.servesCached(f.policyName) {
		return meta.Inode{}, false
	}
	return f.attr, true
}
