package client

import (
	"log/slog"
	"time"

	"tessera/internal/clock"
	"tessera/internal/meta"
	"tessera/internal/meta/metawait"
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
	// OnCallback, if set, is called with the inode of every callback
	// from the meta service, on the callback path, before the callback is
	// acknowledged (so before the change it tells of returns, for a Sync
	// change): it must not block. vfs's attribute cache drops the inode
	// there (LeaseMark says how long what it keeps is called back).
	OnCallback func(ino meta.Ino)

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
