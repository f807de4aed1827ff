package client

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"tessera/internal/block"
	"tessera/internal/meta"
)

// Poll-loop retry bounds while the meta service is unreachable.
const (
	pollBackoffMin = 50 * time.Millisecond
	pollBackoffMax = 2 * time.Second
)

// binding is the session the client's meta calls are made for.
type binding struct {
	id  meta.SessionID
	ttl time.Duration
	api meta.API // bound to id
}

// callbacks owns the client's meta session and its poll loop (DESIGN §2.4).
type callbacks struct {
	c        *Client
	raw      meta.API // unbound
	binder   meta.SessionBinder
	cur      atomic.Pointer[binding]
	received atomic.Uint64
	cancel   context.CancelFunc
	done     chan struct{} // closed when the loop has returned
	notify   sync.WaitGroup
}

// startCallbacks opens a session, binds it and starts the poll loop. It is
// called by New when Config.Sessions is set and the API can bind.
func (c *Client) startCallbacks(ctx context.Context, binder meta.SessionBinder) error {
	cb := &callbacks{c: c, raw: c.cfg.Meta, binder: binder, done: make(chan struct{})}
	if err := cb.open(ctx); err != nil {
		return err
	}
	c.cb = cb
	c.api = &sessionAPI{API: cb.raw, cb: cb, sync: c.cfg.SyncCommits}
	loopCtx, cancel := context.WithCancel(context.Background())
	cb.cancel = cancel
	go cb.run(loopCtx)
	return nil
}

// open starts a new session and makes it the one calls are bound to.
func (cb *callbacks) open(ctx context.Context) error {
	info, err := cb.raw.OpenSession(ctx)
	if err != nil {
		return err
	}
	ttl := info.TTL
	if ttl <= 0 {
		ttl = meta.DefaultSessionTTL
	}
	cb.cur.Store(&binding{id: info.ID, ttl: ttl, api: cb.binder.WithSession(info.ID)})
	return nil
}

// stop ends the poll loop and the session.
func (cb *callbacks) stop(ctx context.Context) error {
	cb.cancel()
	<-cb.done
	cb.notify.Wait()
	return cb.raw.CloseSession(ctx, cb.cur.Load().id)
}

// run polls for callbacks and applies them until ctx ends. A callback is
// acknowledged (by the next poll) only after it was applied.
func (cb *callbacks) run(ctx context.Context) {
	defer close(cb.done)
	log := cb.c.log
	var ack uint64
	backoff := pollBackoffMin
	down, dropped := false, false
	lastOK := time.Now()
	for ctx.Err() == nil {
		b := cb.cur.Load()
		cbs, err := cb.raw.Callbacks(ctx, b.id, ack, b.ttl/3)
		switch {
		case err == nil:
			if down {
				log.Info("meta service reachable again; callbacks resume")
			}
			down, dropped, backoff, lastOK = false, false, pollBackoffMin, time.Now()
			for _, x := range cbs {
				cb.apply(x)
				ack = x.Seq
			}
			continue
		case ctx.Err() != nil:
			return
		case errors.Is(err, meta.ErrSessionExpired):
			log.Warn("meta session expired; dropping cached attributes and recipes", "session", uint64(b.id))
			if err := cb.open(ctx); err != nil {
				cb.c.invalidateAll()
				break // retried below, with backoff
			}
			ack = 0
			// Bound to the new session first, so that what is read after
			// the drop is under a lease.
			cb.c.invalidateAll()
			// The new session holds nothing open yet: say what we do,
			// before the service's restart grace ends. Not in this
			// loop: an open it waits for may itself wait for a change
			// that waits for this loop's acknowledgements.
			cb.notify.Add(1)
			go func() {
				defer cb.notify.Done()
				cb.c.reannounce(ctx)
			}()
			continue
		}
		if !down {
			log.Warn("meta service unreachable; retrying callbacks", "err", err)
			down = true
		}
		if !dropped && time.Since(lastOK) > b.ttl*2/3 {
			// The session is about to expire at the service: writers stop
			// waiting for us, so what we cache can no longer be trusted.
			cb.c.invalidateAll()
			dropped = true
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, pollBackoffMax)
	}
}

// apply applies one callback to the client's caches and then tells the
// FUSE layer, without waiting for it.
func (cb *callbacks) apply(x meta.Callback) {
	cb.received.Add(1)
	c := cb.c
	c.mu.Lock()
	delete(c.mu.seen, x.Ino) // the kernel must not keep the old pages
	f := c.mu.files[x.Ino]
	c.mu.Unlock()
	if f != nil {
		f.enqueue(x)
	}
	cb.tell(x.Ino)
}

// tell calls Config.OnInvalidate for ino in the background.
func (cb *callbacks) tell(ino meta.Ino) {
	fn := cb.c.cfg.OnInvalidate
	if fn == nil {
		return
	}
	cb.notify.Add(1)
	go func() {
		defer cb.notify.Done()
		fn(ino)
	}()
}

// invalidateAll drops every cached recipe and attribute: the session that
// covered them ended.
func (c *Client) invalidateAll() {
	c.mu.Lock()
	files := make([]*file, 0, len(c.mu.files))
	for _, f := range c.mu.files {
		files = append(files, f)
	}
	clear(c.mu.seen)
	c.mu.Unlock()
	for _, f := range files {
		f.enqueue(meta.Callback{Ino: f.ino, Kind: meta.CallbackInvalidate})
		if c.cb != nil {
			c.cb.tell(f.ino)
		}
	}
}

// Session returns the client's meta session, 0 without one.
func (c *Client) Session() meta.SessionID {
	if c.cb == nil {
		return 0
	}
	return c.cb.cur.Load().id
}

// enqueue queues x for f and applies it now unless f is busy; a busy f
// applies it before its next use of the cached state (catchUpLocked), so
// the poll loop never waits for a file's lock (whose holder may itself be
// waiting, in a Sync commit, for this client's acknowledgements).
func (f *file) enqueue(x meta.Callback) {
	f.cbq.Lock()
	f.cbq.q = append(f.cbq.q, x)
	f.cbq.Unlock()
	if f.mu.TryLock() {
		f.drainLocked()
		f.mu.Unlock()
	}
}

// drainLocked applies the queued callbacks.
func (f *file) drainLocked() {
	f.cbq.Lock()
	q := f.cbq.q
	f.cbq.q = nil
	f.cbq.Unlock()
	for _, x := range q {
		f.applyLocked(x)
	}
}

// catchUpLocked applies queued callbacks and, when an invalidation left the
// file's attributes stale and it has no changes of its own, reads them
// again. Call it before using the cached size or recipe.
func (f *file) catchUpLocked(ctx context.Context) error {
	f.drainLocked()
	if !f.loaded || !f.stale || !f.cleanLocked() {
		return nil
	}
	in, err := f.c.api.GetAttr(ctx, f.ino)
	if err != nil {
		return err
	}
	f.stale = false
	f.change = 0 // refreshLocked adopts in whatever its change counter
	f.refreshLocked(in)
	return nil
}

// cleanLocked reports whether f has no uncommitted change.
func (f *file) cleanLocked() bool {
	return len(f.dirty) == 0 && f.nInflight == 0 && len(f.pending) == 0 && !f.metaDirty
}

// applyLocked applies one callback to f's cached state. An update is
// installed when f is clean, not stale, and it is the next change after
// the one f has; anything else becomes an invalidation. With uncommitted
// changes an invalidation keeps the recipe (the commit compares against the
// hashes the changes were based on) and takes effect once f is clean.
func (f *file) applyLocked(x meta.Callback) {
	if !f.loaded {
		return
	}
	if x.Kind == meta.CallbackUpdate && x.Inode.Change <= f.change && !f.stale {
		return // already seen: our own read or commit was newer
	}
	if x.Kind != meta.CallbackUpdate || f.stale || !f.cleanLocked() || x.Inode.Change != f.change+1 {
		f.stale = true
		if f.cleanLocked() {
			f.windows = make(map[uint64][]block.Hash)
		}
		return
	}
	in := x.Inode
	for _, ch := range x.Changes {
		if !ch.InlineNew {
			f.setHashLocked(ch.Index, ch.New)
		}
	}
	if x.SetSize {
		f.trimWindowsLocked(int64(in.Size))
	}
	f.size = int64(in.Size)
	f.change = in.Change
	f.hasInline = in.HasInline
	f.inline = in.Inline
}

// sessionAPI is the meta API the client and the FUSE layer use with
// sessions on: calls that read or change an inode go through the current
// session's binding (so they gain leases), the rest straight to the
// service.
type sessionAPI struct {
	meta.API // unbound
	cb       *callbacks
	sync     bool // Commit and SetAttr wait for the callbacks they cause
}

func (s *sessionAPI) bound() meta.API { return s.cb.cur.Load().api }

// Lookup implements meta.API.
func (s *sessionAPI) Lookup(ctx context.Context, parent meta.Ino, name string) (meta.Inode, error) {
	return s.bound().Lookup(ctx, parent, name)
}

// GetAttr implements meta.API.
func (s *sessionAPI) GetAttr(ctx context.Context, ino meta.Ino) (meta.Inode, error) {
	return s.bound().GetAttr(ctx, ino)
}

// SetAttr implements meta.API.
func (s *sessionAPI) SetAttr(ctx context.Context, ino meta.Ino, req meta.SetAttrReq) (meta.Inode, error) {
	req.Sync = req.Sync || s.sync
	return s.bound().SetAttr(ctx, ino, req)
}

// Create implements meta.API.
func (s *sessionAPI) Create(ctx context.Context, req meta.CreateReq) (meta.Inode, error) {
	return s.bound().Create(ctx, req)
}

// Link implements meta.API.
func (s *sessionAPI) Link(ctx context.Context, ino, newParent meta.Ino, newName string) (meta.Inode, error) {
	return s.bound().Link(ctx, ino, newParent, newName)
}

// Unlink implements meta.API.
func (s *sessionAPI) Unlink(ctx context.Context, parent meta.Ino, name string, reap meta.Ino) (meta.Inode, error) {
	return s.bound().Unlink(ctx, parent, name, reap)
}

// HoldOpen implements meta.API.
func (s *sessionAPI) HoldOpen(ctx context.Context, ino meta.Ino) (meta.Inode, error) {
	return s.bound().HoldOpen(ctx, ino)
}

// ReleaseOpen implements meta.API.
func (s *sessionAPI) ReleaseOpen(ctx context.Context, ino meta.Ino) error {
	return s.bound().ReleaseOpen(ctx, ino)
}

// Rename implements meta.API.
func (s *sessionAPI) Rename(ctx context.Context, oldParent meta.Ino, oldName string, newParent meta.Ino, newName string, flags uint32) (meta.Inode, error) {
	return s.bound().Rename(ctx, oldParent, oldName, newParent, newName, flags)
}

// GetRecipe implements meta.API.
func (s *sessionAPI) GetRecipe(ctx context.Context, ino meta.Ino, first, count uint64) (meta.Recipe, error) {
	return s.bound().GetRecipe(ctx, ino, first, count)
}

// Commit implements meta.API.
func (s *sessionAPI) Commit(ctx context.Context, req meta.CommitReq) (meta.Inode, error) {
	req.Sync = req.Sync || s.sync
	return s.bound().Commit(ctx, req)
}

// SetXattr implements meta.API.
func (s *sessionAPI) SetXattr(ctx context.Context, ino meta.Ino, name string, value []byte, flags uint32) error {
	return s.bound().SetXattr(ctx, ino, name, value, flags)
}

// RemoveXattr implements meta.API.
func (s *sessionAPI) RemoveXattr(ctx context.Context, ino meta.Ino, name string) error {
	return s.bound().RemoveXattr(ctx, ino, name)
}
