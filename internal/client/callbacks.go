package client

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"tessera/internal/backoff"
	"tessera/internal/block"
	"tessera/internal/meta"
	"tessera/internal/meta/metawait"
)

// pollBackoff is the poll loop's wait between tries while the meta service
// is unreachable: 50 ms doubling to 2 s.
var pollBackoff = backoff.Policy{Base: 50 * time.Millisecond, Max: 2 * time.Second}

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
	// leased: the latest poll succeeded, so the session holds its leases;
	// false from a failed poll until a poll succeeds or a new session is
	// open (catchUpLocked revalidates unleased files until then).
	leased atomic.Bool
	// epoch counts the times leased fell to false (and the times every
	// cached state was invalidated): LeaseMark.
	epoch atomic.Uint64
	// reopened are the hooks reopen runs (onSessionReopened).
	reopened struct {
		sync.Mutex
		fns []func(ctx context.Context, bound meta.API) error
	}
}

// startCallbacks opens a session, binds it and starts the poll loop. It is
// called by New when Config.Sessions is set and the API can bind.
func (c *Client) startCallbacks(ctx context.Context, binder meta.SessionBinder) error {
	cb := &callbacks{c: c, raw: c.cfg.Meta, binder: binder, done: make(chan struct{})}
	if err := cb.open(ctx); err != nil {
		return err
	}
	cb.leased.Store(true)
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
	bo := pollBackoff.Start()
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
			down, dropped, lastOK = false, false, time.Now()
			bo.Reset()
			cb.leased.Store(true)
			for _, x := range cbs {
				cb.apply(x)
				ack = x.Seq
			}
			continue
		case ctx.Err() != nil:
			return
		case errors.Is(err, meta.ErrSessionExpired):
			cb.unlease()
			log.Warn("meta session expired; opening a new one, cached attributes and recipes are revalidated", "session", uint64(b.id))
			if err := cb.reopen(ctx); err != nil {
				cb.c.invalidateAll()
				break // retried below, with backoff
			}
			ack = 0
			down, dropped, lastOK = false, false, time.Now()
			bo.Reset()
			continue
		}
		if !down {
			log.Warn("meta service unreachable; retrying callbacks", "err", err)
			down = true
			// The service may be restarting, and a new one knows none
			// of our leases: what we cache is revalidated before use by
			// policies that need the service (catchUpLocked) until a
			// poll tells the session is alive.
			cb.unlease()
			cb.c.suspectAll()
		}
		if !dropped && time.Since(lastOK) > b.ttl*2/3 {
			// The session is about to expire at the service: writers stop
			// waiting for us, so what we cache can no longer be trusted.
			cb.c.invalidateAll()
			dropped = true
		}
		t := time.NewTimer(bo.Next())
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-cb.c.metaKick: // the service answers again (metaBack)
			t.Stop()
			bo.Reset()
		case <-t.C:
		}
	}
}

// reopen replaces a session the meta service no longer knows (it restarted,
// or this client did not poll within the TTL) by a new one: calls are bound
// to the new session first, so that what is read after is under a lease;
// then every open file is marked unleased (its cached attributes and recipe
// are revalidated before a use that needs them, an uncommitted change is
// committed with the hashes it was based on, and a conflict is redone as
// always), the kernel is told, and the hooks onSessionReopened registered
// run in order with the API bound to the new session.
func (cb *callbacks) reopen(ctx context.Context) error {
	if err := cb.open(ctx); err != nil {
		return err
	}
	cb.c.invalidateAll()
	cb.leased.Store(true)
	cb.reopened.Lock()
	fns := slices.Clone(cb.reopened.fns)
	cb.reopened.Unlock()
	bound := cb.cur.Load().api
	for _, fn := range fns {
		if err := fn(ctx, bound); err != nil {
			cb.c.log.Warn("after reopening the meta session", "err", err)
		}
	}
	// The new session holds nothing open yet: say what we do, before the
	// service's restart grace ends. Not in the poll loop: an open it waits
	// for may itself wait for a change that waits for the loop's
	// acknowledgements.
	cb.notify.Add(1)
	go func() {
		defer cb.notify.Done()
		cb.c.reannounce(ctx)
	}()
	return nil
}

// unlease notes that the session may no longer hold its leases.
func (cb *callbacks) unlease() {
	cb.leased.Store(false)
	cb.epoch.Add(1)
}

// LeaseMark returns a mark of the client's meta session and whether the
// session is known to hold its leases now (false without sessions: nothing
// is leased). A state read from the meta service after a call of LeaseMark
// that returned (m, true) is kept current by callbacks (OnCallback) for as
// long as LeaseMark keeps returning (m, true): the mark changes whenever
// the session may have lost its leases (a failed poll, an expired or
// replaced session).
func (c *Client) LeaseMark() (uint64, bool) {
	if c.cb == nil {
		return 0, false
	}
	m := c.cb.epoch.Load()
	return m, c.cb.leased.Load()
}

// onSessionReopened registers fn to run each time the client's meta
// session is replaced by a new one (reopen), with the API bound to the new
// session: state the session held at the service (leases, open handles) is
// announced again there. Without sessions it does nothing.
func (c *Client) onSessionReopened(fn func(ctx context.Context, bound meta.API) error) {
	if c.cb == nil {
		return
	}
	c.cb.reopened.Lock()
	c.cb.reopened.fns = append(c.cb.reopened.fns, fn)
	c.cb.reopened.Unlock()
}

// apply applies one callback to the client's caches and then tells the
// FUSE layer, without waiting for it.
func (cb *callbacks) apply(x meta.Callback) {
	cb.received.Add(1)
	c := cb.c
	c.called.record(x.Ino)
	c.mu.Lock()
	delete(c.mu.seen, x.Ino) // the kernel must not keep the old pages
	f := c.mu.files[x.Ino]
	c.mu.Unlock()
	if f != nil {
		f.enqueue(x)
	}
	if fn := c.cfg.OnCallback; fn != nil {
		fn(x.Ino)
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

// leaseLost is a callback kind of the client's own, never sent by the meta
// service: the session that leased the file's cached state may have ended.
// It marks the file unleased (catchUpLocked).
const leaseLost meta.CallbackKind = 255

// invalidateAll marks every open file unleased and makes the kernel forget
// what it cached: the session that covered them ended.
func (c *Client) invalidateAll() {
	if c.cb != nil {
		c.cb.epoch.Add(1)
	}
	c.mu.Lock()
	clear(c.mu.seen)
	c.mu.Unlock()
	for _, f := range c.suspectAll() {
		if c.cb != nil {
			c.cb.tell(f.ino)
		}
	}
}

// suspectAll marks every open file unleased and returns them.
func (c *Client) suspectAll() []*file {
	c.mu.Lock()
	files := make([]*file, 0, len(c.mu.files))
	for _, f := range c.mu.files {
		files = append(files, f)
	}
	c.mu.Unlock()
	for _, f := range files {
		f.enqueue(meta.Callback{Ino: f.ino, Kind: leaseLost})
	}
	return files
}

// sessionLeased reports whether the client's session is known to hold its
// leases (always true without sessions: nothing is leased, nothing lost).
func (c *Client) sessionLeased() bool { return c.cb == nil || c.cb.leased.Load() }

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
//
// An unleased file (its session may have ended, leaseLost) is revalidated
// the same way, keeping its recipe if its change counter is unchanged;
// while the meta service is unavailable, a file whose policy lets it serve
// cached data (timed and write-once caches) goes on with what it has, and
// one that needs the service (coherent, uncached) waits for it. It stays
// unleased until the session is known to hold its leases again.
func (f *file) catchUpLocked(ctx context.Context) error {
	f.drainLocked()
	if !f.loaded || !(f.stale || f.unleased) || !f.cleanLocked() {
		return nil
	}
	cached := !f.stale && f.c.servesCached(f.policyName)
	actx := ctx
	if cached {
		actx = metawait.NoWait(ctx)
	}
	in, err := f.c.api.GetAttr(actx, f.ino)
	if err != nil {
		if cached && meta.Unavailable(err) {
			return nil
		}
		return err
	}
	if f.stale {
		f.change = 0 // refreshLocked adopts in whatever its change counter
	}
	f.stale = false
	f.unleased = f.unleased && !f.c.sessionLeased()
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
	if x.Kind == leaseLost {
		f.unleased = true // the cached recipe stays until revalidated
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
// service. Written by hand, not generated (internal/meta/wrapgen): which
// calls are bound is a choice per method (as meta's boundService makes
// it), and Commit and SetAttr also set Sync.
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
