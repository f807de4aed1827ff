package client

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"tessera/internal/meta"
	"tessera/internal/policy"
)

// Attribute changes ride with the commit of the writes they follow.
//
// tar writes a file and then, on the open descriptor, sets its owner, mode
// and times (fchown, fchmod, futimens) before closing it: three meta
// transactions before the close's commit (bench/results/
// 2026-11-29-tree-profile.md). Under a policy that commits at fsync and
// close and whose caches are timed (session, nfs, relaxed), another
// client sees this file's writes only once they are committed, and its
// attributes within the cache's time to live; so a change of mode, owner
// or times of a file this client has open with uncommitted writes is held
// with those writes (DeferAttr) and sent, merged into one SetAttr, just
// before their commit. This client answers with the held attributes from
// then on (Overlay). Under a coherent policy (posix) another client must
// see the change at once, and it is sent at once.

// deferAttrValid are the changes DeferAttr holds.
const deferAttrValid = meta.SetMode | meta.SetUid | meta.SetGid | meta.SetAtime | meta.SetMtime

// pendAttr is an attribute change held for the next commit.
type pendAttr struct {
	req meta.SetAttrReq
	at  int64 // when it was made (the ctime it shows)
	// base is the inode as read for the first change held: the next
	// ones apply on it without reading it again.
	base meta.Inode
}

// WouldDeferAttr reports whether DeferAttr may hold a change of ino's
// attributes, and whether it needs the current ones read for it (none is
// held yet: a change held already carries them).
func (c *Client) WouldDeferAttr(ino meta.Ino) (would, needInode bool) {
	f := c.deferrable(ino)
	if f == nil {
		return false, false
	}
	defer f.mu.Unlock()
	return true, f.pendAttr.req.Valid == 0
}

// deferrable returns ino's file, locked, when a change of its attributes
// may be held for the commit of its writes (nil otherwise).
func (c *Client) deferrable(ino meta.Ino) *file {
	c.mu.Lock()
	f := c.mu.files[ino]
	open := f != nil && f.opens > 0
	c.mu.Unlock()
	if !open {
		return nil
	}
	f.mu.Lock()
	if !f.loaded || f.lost != nil || f.stale || f.unleased || f.cleanLocked() {
		f.mu.Unlock()
		return nil
	}
	k := c.PolicyFor(f.policyName).Knobs()
	if k.Commit == policy.CommitEachWrite || k.Cache == policy.CacheCoherent || k.Cache == policy.CacheNone {
		f.mu.Unlock()
		return nil
	}
	return f
}

// DeferAttr holds req, a change of ino's attributes whose current state
// is in (the zero Inode: the one a held change carries), for the next
// commit of this client's uncommitted writes to ino, when the file's
// policy allows (see above); it returns the inode as this client sees it
// then. ok false: nothing is held, the caller sends req.
func (c *Client) DeferAttr(ino meta.Ino, req meta.SetAttrReq, in meta.Inode) (out meta.Inode, ok bool) {
	if req.Valid == 0 || req.Valid&^deferAttrValid != 0 || req.Sync || (in.Ino != ino && in.Ino != 0) {
		return in, false
	}
	f := c.deferrable(ino)
	if f == nil {
		return in, false
	}
	defer f.mu.Unlock()
	p := &f.pendAttr
	switch {
	case p.req.Valid == 0 && in.Ino == 0:
		return in, false // nothing held carries the inode
	case p.req.Valid == 0:
		p.base = in
	case in.Ino == 0:
		in = p.base
	}
	p.req.Valid |= req.Valid
	if req.Valid&meta.SetMode != 0 {
		p.req.Mode = req.Mode
	}
	if req.Valid&meta.SetUid != 0 {
		p.req.Uid = req.Uid
	}
	if req.Valid&meta.SetGid != 0 {
		p.req.Gid = req.Gid
	}
	if req.Valid&meta.SetAtime != 0 {
		p.req.Atime = req.Atime
	}
	if req.Valid&meta.SetMtime != 0 {
		p.req.Mtime = req.Mtime
	}
	p.at = time.Now().UnixNano()
	c.deferredAttrs.Add(1)
	f.overlayLocked(&in)
	return in, true
}

// applyPendLocked shows the held attribute change on in.
func (f *file) applyPendLocked(in *meta.Inode) {
	p := f.pendAttr
	if p.req.Valid == 0 {
		return
	}
	if p.req.Valid&meta.SetMode != 0 {
		in.Mode = in.Mode&syscall.S_IFMT | p.req.Mode&^syscall.S_IFMT
	}
	if p.req.Valid&meta.SetUid != 0 {
		in.Uid = p.req.Uid
	}
	if p.req.Valid&meta.SetGid != 0 {
		in.Gid = p.req.Gid
	}
	if p.req.Valid&meta.SetAtime != 0 {
		in.Atime = p.req.Atime
	}
	if p.req.Valid&meta.SetMtime != 0 {
		in.Mtime = p.req.Mtime
	}
	in.Ctime = max(in.Ctime, p.at)
}

// sendPendLocked sends the held attribute change, before the commit it
// rides with; it stays held if that fails.
func (f *file) sendPendLocked(ctx context.Context) error {
	if f.pendAttr.req.Valid == 0 {
		return nil
	}
	in, err := f.c.api.SetAttr(ctx, f.ino, f.pendAttr.req)
	if err != nil {
		return fmt.Errorf("set attributes of inode %d: %w", f.ino, err)
	}
	f.pendAttr = pendAttr{}
	f.attr = in
	return nil
}
