package gateway

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"syscall"
	"time"

	"tessera/internal/client"
	"tessera/internal/gateway/home"
	"tessera/internal/meta"
)

// MetaAPI is what an Ingester needs of the meta service.
type MetaAPI interface {
	meta.API
	meta.FilesetAPI
}

// Ingester reads fileset homes into the cluster; see the package comment.
type Ingester struct {
	meta  MetaAPI
	data  *client.Client
	open  func(ctx context.Context, url string) (home.Store, error)
	now   func() time.Time
	chunk int64
	depth int // home reads in flight per fetch (window.go)
	// slots bounds the buffers of all the fetches' windows together
	// (Options.MaxBuffered / chunk of them).
	slots  chan struct{}
	mu     sync.Mutex
	stores map[meta.Ino]home.Store // by fileset root
	stats  Stats
	// recording serializes the records of one inode's runs (by inode
	// number, striped).
	recording [64]sync.Mutex
}

// Options configure an Ingester; zero values take the defaults.
type Options struct {
	// Open opens a home store by URL; default home.Open.
	Open func(ctx context.Context, url string) (home.Store, error)
	// Now is the clock (validation times); default time.Now.
	Now func() time.Time
	// Chunk is how many bytes one home read asks for; default 4 MiB.
	Chunk int64
	// InFlight is how many home reads of Chunk bytes one fetch keeps in
	// flight while it stores the ranges already read (the window: at
	// most InFlight x Chunk bytes held per fetch); default
	// DefaultInFlight. 1 reads one range at a time.
	InFlight int
	// MaxBuffered bounds the bytes the windows of all the Ingester's
	// fetches hold at once (rounded down to whole Chunks, at least one):
	// a fetch waits for another's buffers before it reads more of home.
	// Default DefaultMaxBuffered.
	MaxBuffered int64
}

// Stats count what an Ingester fetched.
type Stats struct {
	Listings   uint64 // home directories listed
	Entries    uint64 // entries handed to IngestDir
	Ranges     uint64 // ranges fetched (a Fetch, or one range of a split fetch)
	Reads      uint64 // ranged home reads
	BytesFetch uint64 // bytes read from home
}

// NewIngester returns an Ingester over the meta service m and the data
// path c (a client of the same cluster).
func NewIngester(m MetaAPI, c *client.Client, opts Options) *Ingester {
	g := &Ingester{meta: m, data: c, open: opts.Open, now: opts.Now, chunk: opts.Chunk, stores: map[meta.Ino]home.Store{}}
	if g.open == nil {
		g.open = home.Open
	}
	if g.now == nil {
		g.now = time.Now
	}
	if g.chunk <= 0 {
		g.chunk = 4 << 20
	}
	g.depth = opts.InFlight
	if g.depth <= 0 {
		g.depth = DefaultInFlight
	}
	if opts.MaxBuffered <= 0 {
		opts.MaxBuffered = DefaultMaxBuffered
	}
	g.slots = make(chan struct{}, max(1, opts.MaxBuffered/g.chunk))
	return g
}

// Stats returns the counts so far.
func (g *Ingester) Stats() Stats {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.stats
}

// Close closes the home stores the Ingester opened.
func (g *Ingester) Close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	var errs []error
	for root, s := range g.stores {
		errs = append(errs, s.Close())
		delete(g.stores, root)
	}
	return errors.Join(errs...)
}

// store returns the home store of fileset root, opening it once.
func (g *Ingester) store(ctx context.Context, root meta.Ino) (home.Store, error) {
	g.mu.Lock()
	s := g.stores[root]
	g.mu.Unlock()
	if s != nil {
		return s, nil
	}
	f, err := g.meta.Fileset(ctx, root)
	if err != nil {
		return nil, err
	}
	s, err = g.open(ctx, f.Home)
	if err != nil {
		return nil, fmt.Errorf("open home of fileset %d: %w", root, err)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if old := g.stores[root]; old != nil {
		s.Close()
		return old, nil
	}
	g.stores[root] = s
	return s, nil
}

// section returns in's gateway section, or an error naming why in is not
// an inode of a fileset.
func section(in meta.Inode) (*meta.GatewayInfo, error) {
	if in.Gateway == nil {
		return nil, fmt.Errorf("inode %d is in no fileset: %w", in.Ino, meta.ErrInvalid)
	}
	return in.Gateway, nil
}

// ListDir lists fileset directory dir at home and adds its entries as
// placeholders; it returns the directory as it is afterwards.
func (g *Ingester) ListDir(ctx context.Context, dir meta.Ino) (meta.Inode, error) {
	in, err := g.meta.GetAttr(ctx, dir)
	if err != nil {
		return meta.Inode{}, fmt.Errorf("list home of directory %d: %w", dir, err)
	}
	sec, err := section(in)
	if err != nil {
		return meta.Inode{}, fmt.Errorf("list home of directory %d: %w", dir, err)
	}
	st, err := g.store(ctx, sec.Fileset)
	if err != nil {
		return meta.Inode{}, fmt.Errorf("list home of directory %d: %w", dir, err)
	}
	validated := g.now().UnixNano()
	attrs, err := st.ReadDir(ctx, sec.HomePath)
	if err != nil {
		return meta.Inode{}, fmt.Errorf("list home of directory %d (%q): %w", dir, sec.HomePath, err)
	}
	ents := make([]meta.HomeEntry, 0, len(attrs))
	for _, a := range attrs {
		e, ok := homeEntry(a)
		if ok {
			ents = append(ents, e)
		}
	}
	g.mu.Lock()
	g.stats.Listings++
	g.stats.Entries += uint64(len(ents))
	g.mu.Unlock()
	for {
		n := min(len(ents), meta.MaxIngestEntries)
		last := n == len(ents)
		out, err := g.meta.IngestDir(ctx, meta.IngestDirReq{Dir: dir, Entries: ents[:n], Done: last, Validated: validated})
		if err != nil {
			return meta.Inode{}, fmt.Errorf("list home of directory %d: %w", dir, err)
		}
		if last {
			return out, nil
		}
		ents = ents[n:]
	}
}

// homeEntry converts a home entry; ok is false for kinds a fileset does
// not hold (none today) or a symlink whose target the store did not say.
func homeEntry(a home.Attr) (meta.HomeEntry, bool) {
	e := meta.HomeEntry{Name: a.Name, Mode: a.Mode & 0o7777, Token: a.Token, Target: a.Target}
	if !a.Mtime.IsZero() {
		e.HomeMtime = a.Mtime.UnixNano()
	}
	if !a.Ctime.IsZero() {
		e.HomeCtime = a.Ctime.UnixNano()
	}
	switch a.Kind {
	case home.KindDir:
		e.Mode |= syscall.S_IFDIR
	case home.KindSymlink:
		if a.Target == "" {
			return e, false
		}
		e.Mode |= syscall.S_IFLNK
	case home.KindFile:
		e.Mode |= syscall.S_IFREG
		if a.Size > 0 {
			e.Size = uint64(a.Size)
		}
	default:
		return e, false
	}
	return e, true
}

// Fetch reads the blocks holding [off, off+n) of fileset file ino from
// home (cut at the home size the inode records), stores them through the
// data path and records them in the inode's cached runs: once every block
// is in, the file is cached. It returns the inode afterwards. (Group.Fetch
// is what a mount asks: it splits, shares and prefetches.) Blocks are
// recorded as they are stored, in order: after an error the blocks before
// the failed range stay recorded and readable, none after it is recorded.
func (g *Ingester) Fetch(ctx context.Context, ino meta.Ino, off, n int64) (meta.Inode, error) {
	in, err := g.meta.GetAttr(ctx, ino)
	if err != nil {
		return meta.Inode{}, fmt.Errorf("fetch inode %d: %w", ino, err)
	}
	sec, err := section(in)
	if err != nil {
		return meta.Inode{}, fmt.Errorf("fetch inode %d: %w", ino, err)
	}
	if off < 0 || n < 0 {
		return meta.Inode{}, fmt.Errorf("fetch inode %d: range %d+%d: %w", ino, off, n, meta.ErrInvalid)
	}
	bs, nb := geometry(in, sec)
	first := uint64(off / bs)
	end := min(uint64((min(off, int64(sec.HomeSize))+min(n, int64(sec.HomeSize))+bs-1)/bs), nb)
	if first >= end {
		return in, nil
	}
	// recorded is the end of the blocks recorded so far; out the inode
	// after the last record.
	recorded, out := first, meta.Inode{}
	stored := func(sec *meta.GatewayInfo, pos int64) error {
		upto := uint64(pos / bs) // whole blocks stored
		if pos >= int64(sec.HomeSize) {
			upto = end // the file's last block, short, is whole
		}
		upto = min(upto, end)
		if upto <= recorded {
			return nil
		}
		o, err := g.recordRun(ctx, ino, sec, meta.BlockRange{First: recorded, End: upto})
		if err != nil {
			return recordErr{err} // names the fetch already
		}
		recorded, out = upto, o
		return nil
	}
	in, _, done, err := g.fetchData(ctx, ino, int64(first)*bs, int64(end-first)*bs, stored)
	if err != nil || done {
		return in, err
	}
	return out, nil
}

// FetchData is Fetch without recording the cache state: what a gateway
// does for a range of a file another gateway owns, which records the
// state once every range is in (Group).
func (g *Ingester) FetchData(ctx context.Context, ino meta.Ino, off, n int64) error {
	_, _, _, err := g.fetchData(ctx, ino, off, n, nil)
	return err
}

// fetchData stores [off, off+n) of ino, reading home through a window of
// reads in flight (readWindow); done is true when the file was cached
// already (nothing fetched). With stored set, each range is committed
// once written and stored is told where the stored bytes end (from off),
// in order: what it records is on the block servers and in the inode.
func (g *Ingester) fetchData(ctx context.Context, ino meta.Ino, off, n int64, stored func(sec *meta.GatewayInfo, pos int64) error) (meta.Inode, *meta.GatewayInfo, bool, error) {
	// What it stores is home's content: not a local update to write
	// back, and allowed in a read-only fileset.
	ctx = meta.WithoutWriteback(ctx)
	in, err := g.meta.GetAttr(ctx, ino)
	if err != nil {
		return meta.Inode{}, nil, false, fmt.Errorf("fetch inode %d: %w", ino, err)
	}
	sec, err := section(in)
	if err != nil {
		return meta.Inode{}, nil, false, fmt.Errorf("fetch inode %d: %w", ino, err)
	}
	if !in.IsRegular() {
		return meta.Inode{}, nil, false, fmt.Errorf("fetch inode %d: not a regular file: %w", ino, meta.ErrInvalid)
	}
	if off < 0 || n < 0 {
		return meta.Inode{}, nil, false, fmt.Errorf("fetch inode %d: range %d+%d: %w", ino, off, n, meta.ErrInvalid)
	}
	if sec.State == meta.CacheCached {
		return in, sec, true, nil
	}
	size := int64(sec.HomeSize)
	end := min(off+n, size)
	st, err := g.store(ctx, sec.Fileset)
	if err != nil {
		return meta.Inode{}, nil, false, fmt.Errorf("fetch inode %d: %w", ino, err)
	}
	g.mu.Lock()
	g.stats.Ranges++
	g.mu.Unlock()
	h, _, err := g.data.Open(ctx, in, syscall.O_RDWR)
	if err != nil {
		return meta.Inode{}, nil, false, fmt.Errorf("fetch inode %d: %w", ino, err)
	}
	defer h.Release(context.WithoutCancel(ctx))
	reads := func(k int) {
		g.mu.Lock()
		g.stats.Reads++
		g.stats.BytesFetch += uint64(k)
		g.mu.Unlock()
	}
	err = readWindow(ctx, st, sec.HomePath, off, end, g.chunk, g.depth, g.slots, reads, func(pos int64, p []byte) error {
		if _, err := h.Write(ctx, pos, p); err != nil {
			return fmt.Errorf("store %d bytes at %d: %w", len(p), pos, err)
		}
		if stored == nil {
			return nil
		}
		if err := h.Flush(ctx); err != nil {
			return fmt.Errorf("commit: %w", err)
		}
		return stored(sec, pos+int64(len(p)))
	})
	var re recordErr
	if errors.As(err, &re) {
		return meta.Inode{}, nil, false, re.error
	}
	if err != nil {
		return meta.Inode{}, nil, false, fmt.Errorf("fetch inode %d: %w", ino, err)
	}
	if err := h.Flush(ctx); err != nil {
		return meta.Inode{}, nil, false, fmt.Errorf("fetch inode %d: commit: %w", ino, err)
	}
	return in, sec, false, nil
}

// errScattered: a run does not fit the inode's cached runs
// (meta.MaxCachedRanges); the file is better fetched whole.
var errScattered = errors.New("too many scattered cached runs")

// recordRun gives ino home's times back (writing moved them) and adds run
// to the cached runs of its gateway section; once the runs cover the file
// it is cached. It is serialized per inode in this gateway (the owner
// records all of a file's runs) and guarded by the inode's Change, tried
// again on a conflict; but if home's object changed since the fetch began
// (a revalidation took the file back: its attributes differ from sec) the
// fetched bytes are not home's any more and nothing is recorded.
func (g *Ingester) recordRun(ctx context.Context, ino meta.Ino, sec *meta.GatewayInfo, run meta.BlockRange) (meta.Inode, error) {
	ctx = meta.WithoutWriteback(ctx) // home's times, not a local update
	l := &g.recording[uint64(ino)%uint64(len(g.recording))]
	l.Lock()
	defer l.Unlock()
	for attempt := 0; ; attempt++ {
		after, err := g.meta.GetAttr(ctx, ino)
		if err != nil {
			return meta.Inode{}, fmt.Errorf("fetch inode %d: %w", ino, err)
		}
		cur, err := section(after)
		if err != nil {
			return meta.Inode{}, fmt.Errorf("fetch inode %d: %w", ino, err)
		}
		if cur.HomeSize != sec.HomeSize || cur.HomeMtime != sec.HomeMtime || cur.HomeCtime != sec.HomeCtime || cur.Token != sec.Token || cur.HomePath != sec.HomePath {
			return meta.Inode{}, fmt.Errorf("fetch inode %d: home's %q changed during the fetch: %w", ino, sec.HomePath, meta.ErrConflict)
		}
		if cur.State == meta.CacheCached {
			return after, nil
		}
		next := *cur
		next.Cached = meta.AddRange(cur.Cached, run)
		_, nb := geometry(after, cur)
		if len(next.Cached) == 1 && next.Cached[0].First == 0 && next.Cached[0].End >= nb {
			next.State, next.Cached = meta.CacheCached, nil
		} else {
			next.State = meta.CachePartial
			if len(next.Cached) > meta.MaxCachedRanges {
				return after, fmt.Errorf("fetch inode %d: %w", ino, errScattered)
			}
		}
		if cur.HomeMtime != 0 && after.Mtime != cur.HomeMtime {
			if after, err = g.meta.SetAttr(ctx, ino, meta.SetAttrReq{Valid: meta.SetMtime | meta.SetAtime, Mtime: cur.HomeMtime, Atime: cur.HomeMtime}); err != nil {
				return meta.Inode{}, fmt.Errorf("fetch inode %d: %w", ino, err)
			}
		}
		out, err := g.meta.SetGateway(ctx, ino, next, after.Change)
		if errors.Is(err, meta.ErrConflict) && attempt < 3 {
			continue
		}
		if err != nil {
			return meta.Inode{}, fmt.Errorf("fetch inode %d: %w", ino, err)
		}
		return out, nil
	}
}

// recordErr is an error of Fetch's recording (recordRun), passed through
// the read window: it names the fetch and the inode already, so fetchData
// returns it as it is rather than prefix it a second time.
type recordErr struct{ error }

func (e recordErr) Unwrap() error { return e.error }
