package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"tessera/internal/meta"
	"tessera/internal/meta/metawait"
)

// Extended attributes of open files are cached like their attributes.
//
// The kernel asks for security.capability before every write(2) to a FUSE
// file (to drop file capabilities on write) and caches no xattr itself:
// each 1 MiB write of a sequential writer cost a round trip to the meta
// service first (~300 a second at eight block servers, in the write's
// path). So a client answers GETXATTR of a file it has open from the
// answers it got, the value or its absence, for as long as the file's
// policy lets the kernel keep the file's attributes (client.CacheTTL: 1 s
// under session, none under the coherent policies). Its own changes of the
// file's xattrs drop the cache, and so does every open (close-to-open sees
// other clients' changes, as it does for attributes). Files not open here,
// and Tessera's own xattrs (policy, replicas), are asked of the service
// every time. While the meta service is unavailable, an answer older than
// the TTL stands in for a fresh one (outage.go).

// xattrCache is the cached xattr answers of one open file; guarded by
// Client.mu.
type xattrCache struct {
	gen     uint64 // bumped by every drop, so an answer asked before it is not kept
	answers map[string]xattrAnswer
}

// xattrAnswer is the value of one xattr, or its absence, asked at `at`.
type xattrAnswer struct {
	value  []byte
	absent bool
	at     time.Time
}

// answer returns the answer as GetXattr does.
func (a xattrAnswer) answer(ino meta.Ino, name string) ([]byte, error) {
	if a.absent {
		return nil, xattrAbsent(ino, name)
	}
	return append([]byte(nil), a.value...), nil
}

// maxCachedXattrs bounds the answers kept per file; more are not cached.
const maxCachedXattrs = 64

// GetXattr is meta.API.GetXattr, answered from the cache for files open
// here under a policy with an attribute TTL.
func (c *Client) GetXattr(ctx context.Context, ino meta.Ino, name string) ([]byte, error) {
	if meta.IsFieldXattr(name) {
		// Tessera's own controls (policy, replicas) are read fresh: a
		// change made on one mount is seen on every other at once.
		return c.api.GetXattr(ctx, ino, name)
	}
	f, ttl := c.openForXattr(ino)
	now := c.cfg.Clock.Now()
	var (
		gen    uint64
		a      xattrAnswer
		cached bool
	)
	if f != nil {
		c.mu.Lock()
		a, cached = f.xattrs.answers[name]
		gen = f.xattrs.gen
		c.mu.Unlock()
		if cached && now.Sub(a.at) < ttl {
			return a.answer(ino, name)
		}
	}
	actx := ctx
	if cached {
		// An older answer stands in while the meta service is unavailable,
		// as the file's cached data does (outage.go).
		actx = metawait.NoWait(ctx)
	}
	v, err := c.api.GetXattr(actx, ino, name)
	if cached && meta.Unavailable(err) {
		return a.answer(ino, name)
	}
	absent := errors.Is(err, meta.ErrNoAttr)
	if f != nil && (err == nil || absent) {
		c.mu.Lock()
		if f.xattrs.gen == gen && len(f.xattrs.answers) < maxCachedXattrs {
			if f.xattrs.answers == nil {
				f.xattrs.answers = make(map[string]xattrAnswer)
			}
			f.xattrs.answers[name] = xattrAnswer{value: append([]byte(nil), v...), absent: absent, at: now}
		}
		c.mu.Unlock()
	}
	return v, err
}

// SetXattr is meta.API.SetXattr; it drops ino's cached xattrs.
func (c *Client) SetXattr(ctx context.Context, ino meta.Ino, name string, value []byte, flags uint32) error {
	defer c.dropXattrs(ino)
	return c.api.SetXattr(ctx, ino, name, value, flags)
}

// RemoveXattr is meta.API.RemoveXattr; it drops ino's cached xattrs.
func (c *Client) RemoveXattr(ctx context.Context, ino meta.Ino, name string) error {
	defer c.dropXattrs(ino)
	return c.api.RemoveXattr(ctx, ino, name)
}

// openForXattr returns the open-file state of ino and how long its xattr
// answers may be kept; nil if ino is not open here or they may not be kept.
func (c *Client) openForXattr(ino meta.Ino) (*file, time.Duration) {
	c.mu.Lock()
	f := c.mu.files[ino]
	c.mu.Unlock()
	if f == nil {
		return nil, 0
	}
	f.mu.Lock()
	name, loaded := f.policyName, f.loaded
	f.mu.Unlock()
	if !loaded {
		return nil, 0
	}
	ttl := c.cacheTTL(name)
	if ttl <= 0 {
		return nil, 0
	}
	return f, ttl
}

// dropXattrs forgets the cached xattrs of ino, if it is open here.
func (c *Client) dropXattrs(ino meta.Ino) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if f := c.mu.files[ino]; f != nil {
		f.dropXattrsLocked()
	}
}

// dropXattrsLocked forgets f's cached xattrs; Client.mu held.
func (f *file) dropXattrsLocked() {
	f.xattrs.gen++
	f.xattrs.answers = nil
}

// xattrAbsent is the error of an xattr known absent, worded as the
// service words it.
func xattrAbsent(ino meta.Ino, name string) error {
	return fmt.Errorf("getxattr %d %q: %w", ino, name, meta.ErrNoAttr)
}
