package client

import (
	"context"
	"sync"
	"sync/atomic"

	"tessera/internal/meta"
)

// holds counts the opens this client has of each inode (files and
// directories), each one recorded with the meta service (meta.API.HoldOpen)
// so that an inode removed on another mount stays while it is open here.
// The meta service keeps them in the session, as soft state: when the
// client opens a new session (the old one expired, or the service
// restarted) it announces them again (reannounce).
type holds struct {
	// announce is read-locked around each HoldOpen or ReleaseOpen and the
	// count change that goes with it, and locked by reannounce: so the
	// counts reannounce sends are exactly those the old session held.
	announce sync.RWMutex
	mu       sync.Mutex
	n        map[meta.Ino]int
	// announced counts the re-announcements done (for tests).
	announced atomic.Uint64
}

func (h *holds) add(ino meta.Ino, d int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.n == nil {
		h.n = make(map[meta.Ino]int)
	}
	h.n[ino] += d
	if h.n[ino] <= 0 {
		delete(h.n, ino)
	}
}

// HoldOpen opens ino with the meta service for one more handle of this
// client (a file or a directory) and returns its attributes, fresh. An
// inode held open stays, even once no name is left, until ReleaseOpen.
func (c *Client) HoldOpen(ctx context.Context, ino meta.Ino) (meta.Inode, error) {
	c.holds.announce.RLock()
	defer c.holds.announce.RUnlock()
	in, err := c.api.HoldOpen(ctx, ino)
	if err != nil {
		return in, err
	}
	c.holds.add(ino, 1)
	return in, nil
}

// HoldOpenDir is HoldOpen for a directory, whose reads the mount's policy
// governs: under a policy that allows lag, a site cut off from the majority
// still opens it (meta.Service.HoldOpen).
func (c *Client) HoldOpenDir(ctx context.Context, ino meta.Ino) (meta.Inode, error) {
	return c.HoldOpen(readContext(ctx, c.PolicyFor(""), 0), ino)
}

// heldByCreate counts an open the meta service recorded with the create
// that made or found ino (meta.CreateReq.Open).
func (c *Client) heldByCreate(ino meta.Ino) {
	c.holds.announce.RLock()
	defer c.holds.announce.RUnlock()
	c.holds.add(ino, 1)
}

// ReleaseOpen drops one open HoldOpen (or a create with Open) recorded.
func (c *Client) ReleaseOpen(ctx context.Context, ino meta.Ino) error {
	c.holds.announce.RLock()
	defer c.holds.announce.RUnlock()
	c.holds.add(ino, -1)
	return c.api.ReleaseOpen(ctx, ino)
}

// reannounce records every open this client holds with the session it is
// now bound to. An inode the service no longer has (the client was away
// past the restart grace and it was reaped) is logged: its handles now
// fail with ENOENT.
func (c *Client) reannounce(ctx context.Context) {
	c.holds.announce.Lock()
	defer c.holds.announce.Unlock()
	c.holds.mu.Lock()
	n := make(map[meta.Ino]int, len(c.holds.n))
	for ino, k := range c.holds.n {
		n[ino] = k
	}
	c.holds.mu.Unlock()
	for ino, k := range n {
		for range k {
			if _, err := c.api.HoldOpen(ctx, ino); err != nil {
				c.log.Warn("re-announcing an open inode to the meta service failed", "inode", ino, "err", err)
				break
			}
		}
	}
	if len(n) > 0 {
		c.log.Info("re-announced the open inodes to the new meta session", "inodes", len(n))
	}
	c.holds.announced.Add(1)
}
