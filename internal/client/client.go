package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"tessera/internal/block"
	"tessera/internal/cachetier"
	"tessera/internal/meta"
	"tessera/internal/policy"
	"tessera/internal/ratelog"
)

// Client is one mount's data path. It is safe for concurrent use.
type Client struct {
	cfg    Config
	api    meta.API
	log    *slog.Logger
	router *router
	mem    *memCache
	pool   *fetchPool // fetch buffers from evicted blocks (bufpool.go)
	disk   *diskCache
	tier   *cachetier.BlockCache // nil without a cache tier
	attrs  *tierAPI              // stats from the cache tier; nil without one
	sums   *segSums
	// policies: PolicyFor's answers by name, made once (policy.go).
	policies map[string]policy.Policy
	files    *localFiles // open block files on this host (localfiles.go)
	bufs     *bufList
	budget   *budget
	uploads  chan struct{} // semaphore
	fetches  chan struct{} // semaphore
	bg       sync.WaitGroup
	cb       *callbacks // nil without a session
	// called: which inodes were called back lately (cblog.go).
	called callbackLog
	holds  holds // opens recorded with the meta service (holds.go)
	// metaKick wakes the poll loop when the meta service is back (outage.go).
	metaKick chan struct{}
	redo     redoStats
	aged     atomic.Uint64 // background commits of data left uncommitted too long
	stop     chan struct{} // closed by Close: background loops end
	loops    sync.WaitGroup
	// uploadFailed keeps a full disk from logging every failed upload.
	uploadFailed ratelog.Limiter
	active       activity      // last read or write (memory.go)
	comps        compCache     // compositions of composed blocks (compose.go)
	trees        treeCache     // hash trees of composed blocks (trees.go)
	compacts     compactQueue  // composed blocks to store whole (compact.go)
	compactNow   chan struct{} // wakes the compaction loop (compactAtClose)
	compacted    atomic.Uint64 // composed blocks stored whole
	// compactFailed keeps failed compactions from flooding the log.
	compactFailed ratelog.Limiter
	idleReleases  atomic.Uint64 // times an idle client gave its memory back
	deferredAttrs atomic.Uint64 // attribute changes held for a commit (pendattr.go)

	mu struct {
		sync.Mutex
		files   map[meta.Ino]*file
		seen    map[meta.Ino]uint64 // change counter whose content the kernel may cache
		flights map[block.Hash]*flight
	}
}

// tierDrainTimeout bounds how long Close waits for queued cache-tier fills.
const tierDrainTimeout = 3 * time.Second

type flight struct {
	done chan struct{}
	buf  *blockBuf // when err is nil: a reference for each waiter
	err  error
	// waiters joined the fetch (under Client.mu); each is given a
	// reference to buf when it lands.
	waiters int
	// urgent: a reader waits for this block (not only read-ahead); its
	// fetch then takes the next free slot of the server's lane.
	urgent atomic.Bool
}

// New makes a client and loads the block-server map.
func New(ctx context.Context, cfg Config) (*Client, error) {
	cfg.setDefaults()
	if cfg.Meta == nil || cfg.Dial == nil {
		return nil, errors.New("client: Config.Meta and Config.Dial are required")
	}
	c := &Client{
		cfg:      cfg,
		api:      cfg.Meta,
		log:      cfg.Logger,
		mem:      newMemCache(cfg.MemCacheBytes),
		pool:     newFetchPool(defaultFetchPoolBytes(cfg.MemCacheBytes)),
		sums:     newSegSums(DefaultSegSumsBytes),
		files:    newLocalFiles(),
		policies: policyTable(cfg.Policy),
		bufs:     newBufList(writeFreeBytes(cfg.DirtyBytes)),
		uploads:  make(chan struct{}, cfg.Uploads),
		fetches:  make(chan struct{}, cfg.Fetches),
		metaKick: make(chan struct{}, 1),
	}
	_, canBind := cfg.Meta.(meta.SessionBinder)
	wait := metaWait(c, &cfg)
	c.cfg.Meta, c.api = wait, wait
	c.budget = newBudget(cfg.DirtyBytes)
	c.mu.files = make(map[meta.Ino]*file)
	c.mu.seen = make(map[meta.Ino]uint64)
	c.mu.flights = make(map[block.Hash]*flight)
	c.router = newRouter(c.api, cfg.Dial, cfg.Logger)
	c.router.site = cfg.Site
	if err := c.router.refresh(ctx); err != nil {
		return nil, err
	}
	if cfg.DiskCacheDir != "" {
		d, err := openDiskCache(cfg.DiskCacheDir, cfg.DiskCacheBytes, cfg.Logger)
		if err != nil {
			return nil, err
		}
		c.disk = d
	}
	var pool *cachetier.Pool
	if cfg.CacheTier != "" {
		var err error
		if pool, err = cachetier.Open(cfg.CacheTier, cachetier.Options{}); err != nil {
			return nil, err
		}
		// Only Lookup and Fill are used: the client itself goes on to the
		// block servers on a miss.
		c.tier = cachetier.NewBlockCache(pool, nil)
	}
	if canBind && cfg.Sessions {
		if err := c.startCallbacks(ctx, wait); err != nil {
			return nil, fmt.Errorf("client: open meta session: %w", err)
		}
	}
	c.stop = make(chan struct{})
	c.compactNow = make(chan struct{}, 1)
	if cfg.MaxUncommitted >= 0 {
		limit := cfg.MaxUncommitted
		if limit == 0 {
			limit = DefaultMaxUncommitted
		}
		c.loops.Add(1)
		go func() {
			defer c.loops.Done()
			c.commitAged(limit, c.stop)
		}()
	}
	if cfg.CompactAfter > 0 {
		c.loops.Add(1)
		go func() {
			defer c.loops.Done()
			c.compactLoop(cfg.CompactAfter, c.stop)
		}()
	}
	c.loops.Add(1)
	go func() {
		defer c.loops.Done()
		c.sweepLocalFiles(c.stop)
	}()
	if cfg.IdleRelease > 0 {
		c.active.touch(time.Now())
		c.loops.Add(1)
		go func() {
			defer c.loops.Done()
			c.releaseIdle(cfg.IdleRelease, c.stop)
		}()
	}
	if pool != nil {
		// Outermost, so that it sees every change this client makes.
		c.attrs = newTierAPI(c.api, pool, c.CacheTTL)
		c.api = c.attrs
	}
	return c, nil
}

// Meta returns the metadata service the client uses, for the FUSE layer's
// namespace calls: under a mount policy that allows it (session, nfs,
// relaxed), its read-only calls may be served by serializable reads
// (nearbyMeta, sites.go).
func (c *Client) Meta() meta.API {
	switch {
	case !c.PolicyFor("").Knobs().SerializableFor(0):
		return c.api
	case c.attrs != nil:
		return nearbyTierMeta{nearbyMeta{c.api}, c.attrs}
	default:
		return nearbyMeta{c.api}
	}
}

// RefreshServers reloads the block-server map.
func (c *Client) RefreshServers(ctx context.Context) error { return c.router.refresh(ctx) }

// Close commits every open file's buffered data and stops background work.
func (c *Client) Close(ctx context.Context) error {
	if c.stop != nil {
		select {
		case <-c.stop:
		default:
			close(c.stop)
		}
		c.loops.Wait()
	}
	c.mu.Lock()
	files := make([]*file, 0, len(c.mu.files))
	for _, f := range c.mu.files {
		files = append(files, f)
	}
	c.mu.Unlock()
	var errs []error
	for _, f := range files {
		f.mu.Lock()
		if err := f.commitLocked(ctx); err != nil {
			errs = append(errs, err)
		}
		f.mu.Unlock()
	}
	c.bg.Wait()
	if c.cb != nil {
		if err := c.cb.stop(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if c.disk != nil {
		c.disk.close()
	}
	if c.attrs != nil {
		c.attrs.stop()
	}
	if c.tier != nil {
		// Blocks fetched just before the unmount are still being filled;
		// give them a moment, so that the next mount finds them.
		dctx, cancel := context.WithTimeout(ctx, tierDrainTimeout)
		c.tier.Drain(dctx)
		cancel()
		c.tier.Close()
	}
	return errors.Join(errs...)
}

// Stats are counters for status output.
type Stats struct {
	MemHits, MemMisses   uint64
	MemBytes             int64
	DirtyBytes           int64
	TierHits, TierMisses uint64
	// AttrHits counts stats answered from the cache tier, AttrMisses
	// those asked of the meta service instead.
	AttrHits, AttrMisses uint64
	Callbacks            uint64 // received from the meta service
	// Commits succeeded; Conflicts met (each answered by a redo or, past
	// the attempts allowed, by CommitsFailed); RedoRetries are the
	// commits re-sent after a redo.
	Commits, Conflicts, RedoRetries, CommitsFailed uint64
	// IdleReleases counts the times an idle client gave its cached blocks
	// and spare buffers back (memory.go).
	IdleReleases uint64
	// DiskHits and DiskMisses count the local disk cache's answers;
	// TierErrors the cache tier's failed operations.
	DiskHits, DiskMisses uint64
	TierErrors           uint64
	// BlockBytesSent and BlockBytesReceived count the block bytes stored
	// on (every copy) and fetched from the block servers.
	BlockBytesSent, BlockBytesReceived uint64
	// ComposedNamed counts the composed block versions this client named
	// (compose.go), ComposedHashed the bytes it hashed to name them
	// (trees.go: what changed, given the version before's tree), and
	// ComposedHashedWhole those it hashed whole (no tree of the version
	// before).
	ComposedNamed, ComposedHashed, ComposedHashedWhole uint64
	// AttrsDeferred counts the attribute changes held for the commit of
	// the writes before them (pendattr.go).
	AttrsDeferred uint64
}

// Stats returns the client's cache and buffer counters.
func (c *Client) Stats() Stats {
	h, m, u := c.mem.stats()
	st := Stats{MemHits: h, MemMisses: m, MemBytes: u, DirtyBytes: c.budget.inUse(),
		Commits: c.redo.commits.Load(), Conflicts: c.redo.conflicts.Load(),
		RedoRetries: c.redo.retries.Load(), CommitsFailed: c.redo.failed.Load(),
		IdleReleases:   c.idleReleases.Load(),
		BlockBytesSent: c.router.sent.Load(), BlockBytesReceived: c.router.received.Load(),
		ComposedNamed: c.trees.named.Load(), ComposedHashed: c.trees.hashed.Load(),
		ComposedHashedWhole: c.trees.whole.Load(), AttrsDeferred: c.deferredAttrs.Load()}
	if c.disk != nil {
		st.DiskHits, st.DiskMisses = c.disk.hits.Load(), c.disk.misses.Load()
	}
	if c.cb != nil {
		st.Callbacks = c.cb.received.Load()
	}
	if c.tier != nil {
		ts := c.tier.Stats()
		st.TierHits, st.TierMisses, st.TierErrors = ts.Hits, ts.Misses, ts.Errors
	}
	if c.attrs != nil {
		st.AttrHits, st.AttrMisses = c.attrs.hits.Load(), c.attrs.misses.Load()
	}
	return st
}

// Overlay replaces the size and mtime of in with this client's view when it
// has the file open with changes not yet committed, and shows an attribute
// change held for their commit (pendattr.go).
func (c *Client) Overlay(in *meta.Inode) {
	c.mu.Lock()
	f := c.mu.files[in.Ino]
	c.mu.Unlock()
	if f == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.loaded {
		return
	}
	f.drainLocked()
	// A stale or unleased clean file defers to in, which is newer than
	// what f has, unless in's change counter says otherwise: a reply that
	// left the meta service before f's own latest commit landed (a link
	// racing a background commit) is older, and its size must not hide
	// the commit's.
	if (f.stale || f.unleased) && f.cleanLocked() && in.Change >= f.change {
		return
	}
	f.overlayLocked(in)
}

// overlayLocked shows f's held attribute change and uncommitted size and
// mtime on in (a write after a held mtime sets it again).
func (f *file) overlayLocked(in *meta.Inode) {
	f.applyPendLocked(in)
	in.Size = uint64(f.size)
	if f.mtime != 0 {
		in.Mtime = f.mtime
	}
}

// MtimeSet tells the client that the application is setting ino's mtime
// (utimensat, futimens: tar does it on the file it has just written, before
// closing it). The writes this client made so far no longer set the mtime
// when they commit, so the time set stays; later writes do set it again.
// Call it before the meta SetAttr: a commit in flight finishes first.
func (c *Client) MtimeSet(ino meta.Ino) {
	c.mu.Lock()
	f := c.mu.files[ino]
	c.mu.Unlock()
	if f == nil {
		return
	}
	f.mu.Lock()
	f.mtime = 0
	f.mu.Unlock()
}

// Unlinked tells the client that ino lost its last name: it is reaped now, or
// when this client's last open handle on it is released.
func (c *Client) Unlinked(ctx context.Context, ino meta.Ino) error {
	c.mu.Lock()
	f := c.mu.files[ino]
	if f == nil {
		f = &file{c: c, ino: ino}
		c.mu.files[ino] = f
	}
	f.unlinked = true
	c.mu.Unlock()
	f.mu.Lock()
	defer f.mu.Unlock()
	c.reapLocked(ctx, f)
	return nil
}
