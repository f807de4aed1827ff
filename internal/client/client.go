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
	"tessera/internal/clock"
	"tessera/internal/meta"
	"tessera/internal/meta/metawait"
	"tessera/internal/placement"
	"tessera/internal/policy"
	"tessera/internal/ratelog"
)

// Config configures a Client. Zero values take the defaults noted.
type Config struct {
	Meta   meta.API
	Dial   Dialer
	Logger *slog.Logger

	// MemCacheBytes bounds the memory block cache (default
	// DefaultMemCacheBytes()); evicted blocks' memory kept for the next
	// fetches adds at most an eighth of it, 32 MiB at most (bufpool.go).
	MemCacheBytes  int64
	DiskCacheDir   string // local disk block cache; "" disables it
	DiskCacheBytes int64  // default 1 GiB
	DirtyBytes     int64  // bound on buffered and uploading data; default DefaultDirtyBytes()
	// CompactAfter: a composed block this client committed is uploaded
	// whole once unchanged for this long (compose.go); default
	// DefaultCompactAfter, negative never.
	CompactAfter time.Duration
	// IdleRelease: a client with no read or write for this long gives its
	// cached blocks and spare buffers back (memory.go); default
	// DefaultIdleRelease, negative never.
	IdleRelease time.Duration
	// TouchAfter: uploads older than this are touched on the block
	// servers before a commit names them (touch.go); default
	// DefaultTouchAfter.
	TouchAfter time.Duration
	Uploads    int // concurrent block uploads; default 32
	Fetches    int // concurrent block fetches; default defaultFetches(MemCacheBytes), 16 to 64
	// ReadAheadBlocks is how many blocks are fetched ahead of a sequential
	// reader. 0 (the default) scales it with the servers: 6 per up server,
	// at least 8, at most what fits in 3/4 of MemCacheBytes (the fetched
	// blocks wait there), so every server has requests queued however the
	// file's blocks fall on them, and memory stays bounded.
	ReadAheadBlocks int
	// CacheTier is a shared memcached tier (IMCa), "memcached://h1:p1,h2:p2";
	// "" for none. Blocks are looked up there after the local caches and
	// before the block servers, and stored there after a miss.
	CacheTier string
	// Site is the site this client runs in (the --site of its mount): it
	// reads blocks from its own site's servers first, then from the
	// nearest other site by measured request time, so that an ordinary
	// read of replicated data crosses no WAN link (sites.go). "" reads in
	// rank order over every site.
	Site string
	// Policy is the mount's default consistency policy, a name
	// policy.Lookup knows, for files whose inode names none; "" means
	// policy.Default.
	Policy string

	// Sessions turns on coherent caching (callbacks.go): when Meta
	// implements meta.SessionBinder the client opens a session, makes its
	// meta calls under it and applies the meta service's callbacks.
	Sessions bool
	// SyncCommits makes commits and setattrs made under the session wait
	// until every other client that cached the inode applied the change
	// (sequential consistency, the posix policy). Needs Sessions.
	SyncCommits bool
	// MaxUncommitted is how long written data may stay uncommitted when
	// the policy commits only on sync or close: older data is committed in
	// the background, so that no upload a client holds ages past the block
	// collector's grace [DefaultMaxUncommitted; negative: never].
	MaxUncommitted time.Duration
	// MetaTimeout is how long a meta call waits for an unavailable meta
	// service before it fails with EIO (outage.go): 0 means
	// metawait.DefaultTimeout (60 s), negative for ever.
	MetaTimeout time.Duration
	// MetaClock is the clock of those waits; nil means the real one.
	MetaClock metawait.Clock
	// OnInvalidate, if set, is called (in its own goroutine) with every
	// inode a callback or an expired session invalidated or updated, after
	// the client's own caches were updated: the FUSE layer drops the
	// kernel's caches of it.
	OnInvalidate func(ino meta.Ino)

	// Clock dates uploads for TouchAfter (touch.go) and times cached
	// xattr answers (xattr.go); nil is the real clock. Tests give a
	// clock.Fake to age them without waiting.
	Clock clock.Clock
}

func (c *Config) setDefaults() {
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.MemCacheBytes == 0 {
		c.MemCacheBytes = DefaultMemCacheBytes()
	}
	if c.DiskCacheBytes == 0 {
		c.DiskCacheBytes = 1 << 30
	}
	if c.DirtyBytes == 0 {
		c.DirtyBytes = DefaultDirtyBytes()
	}
	if c.IdleRelease == 0 {
		c.IdleRelease = DefaultIdleRelease
	}
	if c.CompactAfter == 0 {
		c.CompactAfter = DefaultCompactAfter
	}
	if c.TouchAfter == 0 {
		c.TouchAfter = DefaultTouchAfter
	}
	c.Clock = clock.Or(c.Clock)
	if c.Uploads == 0 {
		c.Uploads = 32
	}
	if c.Fetches == 0 {
		c.Fetches = defaultFetches(c.MemCacheBytes)
	}
}

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
	compacts     compactQueue  // composed blocks to store whole (compact.go)
	compactNow   chan struct{} // wakes the compaction loop (compactAtClose)
	compacted    atomic.Uint64 // composed blocks stored whole
	// compactFailed keeps failed compactions from flooding the log.
	compactFailed ratelog.Limiter
	idleReleases  atomic.Uint64 // times an idle client gave its memory back

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
}

// Stats returns the client's cache and buffer counters.
func (c *Client) Stats() Stats {
	h, m, u := c.mem.stats()
	st := Stats{MemHits: h, MemMisses: m, MemBytes: u, DirtyBytes: c.budget.inUse(),
		Commits: c.redo.commits.Load(), Conflicts: c.redo.conflicts.Load(),
		RedoRetries: c.redo.retries.Load(), CommitsFailed: c.redo.failed.Load(),
		IdleReleases:   c.idleReleases.Load(),
		BlockBytesSent: c.router.sent.Load(), BlockBytesReceived: c.router.received.Load()}
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
// has the file open with changes not yet committed.
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

// getBlock returns a verified block from the caches or the block servers.
// Concurrent requests for the same hash share one fetch. urgent says a
// reader waits for it (false for read-ahead): its fetch goes before the
// read-ahead queued for the same server. The caller may keep the bytes:
// their memory is never reused (blockBuf.keep).
func (c *Client) getBlock(ctx context.Context, h block.Hash, urgent bool) ([]byte, error) {
	b, err := c.getBuf(ctx, h, urgent)
	if err != nil {
		return nil, err
	}
	data := b.keep()
	b.release()
	return data, nil
}

// getPiece is getBlock for a piece of a composed block a reader assembles.
func (c *Client) getPiece(ctx context.Context, h block.Hash) ([]byte, error) {
	return c.getBlock(ctx, h, true)
}

// getBuf is getBlock returning the block with a reference the caller must
// release once done with its bytes, and must not use them after.
func (c *Client) getBuf(ctx context.Context, h block.Hash, urgent bool) (*blockBuf, error) {
	if b := c.mem.get(h); b != nil {
		return b, nil
	}
	c.mu.Lock()
	if fl, ok := c.mu.flights[h]; ok {
		fl.waiters++
		c.mu.Unlock()
		if urgent {
			fl.urgent.Store(true)
		}
		select {
		case <-fl.done:
			return fl.buf, fl.err
		case <-ctx.Done():
			c.mu.Lock()
			if c.mu.flights[h] == fl {
				fl.waiters-- // no reference will be given
				c.mu.Unlock()
				return nil, ctx.Err()
			}
			c.mu.Unlock()
			<-fl.done // landed: a reference was counted for this waiter
			if fl.err == nil {
				fl.buf.release()
			}
			return nil, ctx.Err()
		}
	}
	fl := &flight{done: make(chan struct{})}
	fl.urgent.Store(urgent)
	c.mu.flights[h] = fl
	c.mu.Unlock()

	comp, composed := c.comps.get(h)
	if composed {
		// Stored as pieces: fetched (each taking its own fetch slot)
		// and put together.
		var data []byte
		data, fl.err = c.assemble(withUrgency(ctx, &fl.urgent), h, comp, c.getPiece)
		if fl.err == nil {
			fl.buf = newBlockBuf(data, false, nil)
		}
		if fl.err == nil && c.cfg.CompactAfter > 0 {
			c.compacts.addRead(compactJob{h: h, at: time.Now()})
		}
		if errors.Is(fl.err, block.ErrNotFound) {
			// Stored whole since, and its pieces reclaimed.
			c.comps.drop(h)
			composed = false
		}
	}
	if !composed {
		c.fetches <- struct{}{}
		fl.buf, fl.err = c.fetch(withUrgency(ctx, &fl.urgent), h)
		<-c.fetches
	}
	if fl.err == nil {
		c.mem.put(h, fl.buf)
		// A fetch that lands is use: read-ahead still arriving after
		// the read that started it must not find the cache released
		// and fill it again for an idle client (memory.go).
		c.active.touch(time.Now())
	}
	c.mu.Lock()
	delete(c.mu.flights, h)
	n := fl.waiters
	c.mu.Unlock()
	if fl.err == nil {
		fl.buf.refs.Add(int32(n)) // the waiters'; this fetch still holds its own
	}
	close(fl.done)
	return fl.buf, fl.err
}

// fetch finds a verified copy of h, nearest first: a local copy checked
// against known segment sums, the disk cache, the cache tier, the block
// servers. What came from further away is kept nearer. The block comes
// with the caller's reference; it is read into a pooled buffer when the
// source can read into one (a local copy, a block server).
func (c *Client) fetch(ctx context.Context, h block.Hash) (*blockBuf, error) {
	if e, ok := c.sums.get(h); ok {
		data := c.allocFetch(int(e.size))
		if c.preadLocal(h, data, 0) {
			if e.check(data, 0) {
				return newBlockBuf(data, true, c.pool), nil
			}
			c.localChanged(h)
		}
	}
	if c.disk != nil {
		if data, ok := c.disk.get(h); ok {
			c.learnSums(h, data)
			return newBlockBuf(data, false, c.pool), nil
		}
	}
	if c.tier != nil {
		if data, ok := c.tier.Lookup(ctx, h); ok {
			c.learnSums(h, data)
			return newBlockBuf(data, false, c.pool), nil
		}
	}
	data, local, own, err := c.router.get(ctx, h, c.allocFetch)
	if err != nil {
		return nil, err
	}
	c.learnSums(h, data)
	if c.disk != nil && !local && c.disk.put(h, data) {
		own = false // the disk cache's writer holds it
	}
	if c.tier != nil {
		c.tier.Fill(h, data) // copies
	}
	return newBlockBuf(data, own, c.pool), nil
}

// allocFetch returns a buffer of length n for a fetch: pooled, or fresh
// with the hasher's slack.
func (c *Client) allocFetch(n int) []byte {
	if b := c.pool.get(n); b != nil {
		return b
	}
	return make([]byte, n, n+hashSlack)
}

// readAheadBlocks is the read-ahead depth for blocks of bs bytes (see
// Config.ReadAheadBlocks).
func (c *Client) readAheadBlocks(bs int64) int {
	if c.cfg.ReadAheadBlocks > 0 {
		return c.cfg.ReadAheadBlocks
	}
	return autoReadAhead(c.router.upServers(), bs, c.cfg.MemCacheBytes)
}

// autoReadAhead is the default read-ahead depth with n up servers.
func autoReadAhead(n int, bs, memBytes int64) int {
	d := max(6*n, 8)
	if bs > 0 {
		d = min(d, int(memBytes*3/4/bs))
	}
	return max(d, 1)
}

// prefetch fetches h in the background unless it is cached or in flight.
// A block with a copy on this host whose segment sums are known is not
// fetched but read into the kernel's page cache (adviseLocal): the reader
// reads its ranges from there straight into its reply, checked against the
// sums, with no copy of the block in the process.
func (c *Client) prefetch(h block.Hash) {
	if c.mem.contains(h) {
		return
	}
	c.mu.Lock()
	_, busy := c.mu.flights[h]
	c.mu.Unlock()
	if busy {
		return
	}
	c.bg.Add(1)
	go func() {
		defer c.bg.Done()
		if e, ok := c.sums.get(h); ok && c.adviseLocal(h, e.size) {
			return
		}
		b, err := c.getBuf(context.Background(), h, false)
		if err != nil {
			c.log.Debug("read-ahead failed", "block", h.Short(), "err", err)
			return
		}
		b.release() // the cache holds it
	}()
}

// upload hashes data and stores the copies spec asks for (the zero Spec:
// the cluster's default); an all-zero block becomes a hole. It returns once
// a majority of the copies (of a site spec: of the sites) are durable; rep
// completes when all were tried, and is returned with a failure too, while
// copies may still use data.
func (c *Client) upload(ctx context.Context, data []byte, spec placement.Spec) (h block.Hash, rep *replication, err error) {
	if block.AllZero(data) {
		return block.Hash{}, nil, nil
	}
	h = block.Sum(data)
	c.uploads <- struct{}{}
	rep, err = c.router.put(ctx, h, data, spec)
	<-c.uploads
	if err != nil {
		return h, rep, fmt.Errorf("upload: %w", err)
	}
	// The buffer goes back to the writer's free list, so it is not kept in
	// the memory cache; the segment sums let reads of the fresh copies on
	// this host check just what they read.
	c.learnSums(h, data)
	return h, rep, nil
}

// readRange copies block h's bytes from offset `from` into dst. It reads only
// the needed segments of a copy on this host when the block's segment sums
// are known, else the whole block (verified, and cached).
func (c *Client) readRange(ctx context.Context, h block.Hash, from int64, dst []byte) error {
	if b := c.mem.get(h); b != nil {
		copyBlock(dst, b.data, from)
		b.release()
		return nil
	}
	if e, ok := c.sums.get(h); ok && c.readLocal(h, e, from, dst) {
		return nil
	}
	b, err := c.getBuf(ctx, h, true)
	if err != nil {
		return err
	}
	copyBlock(dst, b.data, from)
	b.release()
	return nil
}

// readLocal copies block h's bytes from offset `from` into dst from a copy on
// this host, reading the segments that cover them and checking them against
// e. A read of whole segments (every page-cache read of the kernel) goes
// straight into dst. It reports false when there is no good local copy.
func (c *Client) readLocal(h block.Hash, e *sumEntry, from int64, dst []byte) bool {
	if from >= e.size {
		clear(dst)
		return true
	}
	n := min(int64(len(dst)), e.size-from)
	off, end, first := e.span(from, n)
	buf := dst[:n]
	if off != from || end != from+n {
		buf = make([]byte, end-off)
	}
	if !c.preadLocal(h, buf, off) {
		return false
	}
	if !e.check(buf, first) {
		c.localChanged(h)
		return false
	}
	if off != from || end != from+n {
		copy(dst, buf[from-off:])
	}
	clear(dst[n:])
	return true
}

// learnSums records the segment sums of verified block data, when there
// is a copy on this host to check against them later (a co-located block
// server or the disk cache): they cost a CRC pass over every byte moved.
func (c *Client) learnSums(h block.Hash, data []byte) {
	if c.disk != nil || c.router.anyLocal() {
		c.sums.learn(h, data)
	}
}

// localChanged handles a local copy that no longer matches the sums learned
// from a verified copy: the sums are dropped and the next read verifies a
// whole copy again (finding and reporting the bad one).
func (c *Client) localChanged(h block.Hash) {
	c.log.Error("a local copy of a block changed since it was verified; verifying again", "block", h.String())
	c.sums.forget(h)
	c.files.drop(h)
}

// makeRoom schedules the upload of every dirty block of every open file, to
// free dirty-memory budget. It reports how many uploads are now under way.
func (c *Client) makeRoom() int {
	c.mu.Lock()
	files := make([]*file, 0, len(c.mu.files))
	for _, f := range c.mu.files {
		files = append(files, f)
	}
	c.mu.Unlock()
	n := 0
	for _, f := range files {
		f.mu.Lock()
		if f.loaded {
			now := time.Now()
			for _, d := range f.dirty {
				if d.retryAt.After(now) {
					continue // its upload failed: back off
				}
				f.scheduleLocked(d)
			}
			n += f.nInflight
		}
		f.mu.Unlock()
	}
	return n
}

// Quotas returns the meta service's quota calls (meta.QuotaAPI), or nil
// when the API the client was given has none.
func (c *Client) Quotas() meta.QuotaAPI {
	qa, _ := c.cfg.Meta.(meta.QuotaAPI)
	return qa
}
