package gateway

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"tessera/internal/meta"
)

// Group is the gateways of one cluster as a mount sees them. Every request
// goes to the gateway owning the inode: the inode number modulo the
// gateways. A fetch asks for the blocks a reader needs: the owner cuts the
// missing ones into pieces of at most RangeSize bytes (whole blocks) and
// deals them round-robin to every gateway, starting with itself; they read
// home in parallel and store their pieces, and the owner records each piece
// in the inode's cached runs. The caller waits only for the blocks it asked
// for; what follows is the fileset's prefetch setting, fetched in the
// background (see Fetch). A block being fetched is fetched once: other
// readers missing it wait for that fetch.
type Group struct {
	gs []*Ingester
	// RangeSize is the most bytes one piece of a fetch holds (rounded up
	// to whole blocks); a larger fetch is split among the gateways.
	// Default 16 MiB.
	RangeSize int64
	// Window is how far past a miss a fileset with prefetch "range"
	// fetches in the background (rounded up to whole blocks). Default
	// 16 MiB.
	Window int64

	fl        flights
	mu        sync.Mutex
	scattered map[meta.Ino]bool // files being fetched whole (fillWhole)
	bg        sync.WaitGroup
	bgCtx     context.Context
	bgStop    context.CancelFunc
}

// NewGroup returns the group of gs (at least one).
func NewGroup(gs ...*Ingester) *Group {
	ctx, stop := context.WithCancel(context.Background())
	return &Group{gs: gs, RangeSize: 16 << 20, Window: 16 << 20, bgCtx: ctx, bgStop: stop, scattered: map[meta.Ino]bool{}}
}

// Close stops the background fetches, waits for them, and closes every
// gateway's home stores.
func (g *Group) Close() error {
	g.bgStop()
	g.bg.Wait()
	for _, x := range g.gs {
		x.Close()
	}
	return nil
}

// Idle waits until the background fetches started so far (prefetch) have
// ended, or ctx ends.
func (g *Group) Idle(ctx context.Context) error {
	done := make(chan struct{})
	go func() { g.bg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Owner returns the index of the gateway owning ino.
func (g *Group) Owner(ino meta.Ino) int { return int(uint64(ino) % uint64(len(g.gs))) }

// ListDir asks the owner of dir.
func (g *Group) ListDir(ctx context.Context, dir meta.Ino) (meta.Inode, error) {
	return g.gs[g.Owner(dir)].ListDir(ctx, dir)
}

// Revalidate asks the owner of ino.
func (g *Group) Revalidate(ctx context.Context, ino meta.Ino, force bool) (bool, error) {
	return g.gs[g.Owner(ino)].Revalidate(ctx, ino, force)
}

// Stats returns each gateway's counts, in order.
func (g *Group) Stats() []Stats {
	out := make([]Stats, len(g.gs))
	for i, x := range g.gs {
		out[i] = x.Stats()
	}
	return out
}

// geometry is a file's block size and block count at home's size.
func geometry(in meta.Inode, sec *meta.GatewayInfo) (bs int64, nb uint64) {
	bs = int64(in.BlockSize)
	if bs <= 0 {
		bs = 4 << 20
	}
	return bs, (sec.HomeSize + uint64(bs) - 1) / uint64(bs)
}

// Fetch makes [off, off+n) of file ino readable from the cache and returns
// the inode afterwards: it fetches the blocks of the range that are not
// cached, split among the gateways, and waits for them (and for those
// other readers are fetching). Then, following the fileset's prefetch
// setting, it starts in the background: nothing more (none), the Window
// after the range (range), or the rest of the file (whole, split among
// the gateways as any large fetch). A range past home's size is cut there.
func (g *Group) Fetch(ctx context.Context, ino meta.Ino, off, n int64) (meta.Inode, error) {
	o := g.Owner(ino)
	owner := g.gs[o]
	in, err := owner.meta.GetAttr(ctx, ino)
	if err != nil {
		return meta.Inode{}, fmt.Errorf("fetch inode %d: %w", ino, err)
	}
	sec, err := section(in)
	if err != nil {
		return meta.Inode{}, fmt.Errorf("fetch inode %d: %w", ino, err)
	}
	if !in.IsRegular() {
		return meta.Inode{}, fmt.Errorf("fetch inode %d: not a regular file: %w", ino, meta.ErrInvalid)
	}
	if off < 0 || n < 0 {
		return meta.Inode{}, fmt.Errorf("fetch inode %d: range %d+%d: %w", ino, off, n, meta.ErrInvalid)
	}
	if sec.State == meta.CacheCached {
		return in, nil
	}
	bs, nb := geometry(in, sec)
	first := uint64(off / bs)
	end := min(uint64((min(off, int64(sec.HomeSize))+min(n, int64(sec.HomeSize))+bs-1)/bs), nb)
	if first < end {
		if err := g.need(ctx, ino, sec, first, end, bs); err != nil {
			return meta.Inode{}, err
		}
	}
	g.prefetch(ctx, ino, sec, bs, first, end, nb)
	out, err := owner.meta.GetAttr(ctx, ino)
	if err != nil {
		return meta.Inode{}, fmt.Errorf("fetch inode %d: %w", ino, err)
	}
	return out, nil
}

// pieceBlocks is how many blocks one piece holds at most.
func (g *Group) pieceBlocks(bs int64) uint64 {
	return uint64(max(1, (g.RangeSize+bs-1)/bs))
}

// need fetches the blocks [first, end) of ino that sec does not hold and
// waits for them. A piece another reader was fetching that failed is
// tried once more by this one (that reader may merely have given up).
func (g *Group) need(ctx context.Context, ino meta.Ino, sec *meta.GatewayInfo, first, end uint64, bs int64) error {
	for attempt := 0; ; attempt++ {
		mine, theirs := g.fl.claim(ino, meta.MissingRanges(sec.Cached, first, end), g.pieceBlocks(bs))
		errs := make(chan error, len(mine))
		for i, p := range mine {
			go func() { errs <- g.fetchPiece(ctx, ino, sec, p, i, bs, true) }()
		}
		var failed error
		for range mine {
			if err := <-errs; err != nil && failed == nil {
				failed = err
			}
		}
		if failed != nil {
			return failed
		}
		retry := false
		for _, p := range theirs {
			select {
			case <-p.done:
			case <-ctx.Done():
				return fmt.Errorf("fetch inode %d: %w", ino, ctx.Err())
			}
			if p.err != nil {
				if attempt > 0 {
					return p.err
				}
				retry = true
			}
		}
		if !retry {
			return nil
		}
		in, err := g.gs[g.Owner(ino)].meta.GetAttr(ctx, ino)
		if err != nil {
			return fmt.Errorf("fetch inode %d: %w", ino, err)
		}
		if sec, err = section(in); err != nil {
			return fmt.Errorf("fetch inode %d: %w", ino, err)
		}
		if sec.State == meta.CacheCached {
			return nil
		}
	}
}

// fetchPiece has the i-th gateway after the owner store piece p, then
// (record) the owner record it, and ends p. A file read at too many
// scattered places to record its runs is fetched whole in the background
// instead (fillWhole); the piece's blocks are stored all the same.
func (g *Group) fetchPiece(ctx context.Context, ino meta.Ino, sec *meta.GatewayInfo, p *piece, i int, bs int64, record bool) (err error) {
	defer func() { g.fl.finish(ino, p, err) }()
	o := g.Owner(ino)
	x := g.gs[(o+i)%len(g.gs)]
	if err := x.FetchData(ctx, ino, int64(p.first)*bs, int64(p.end-p.first)*bs); err != nil {
		return err
	}
	if !record {
		return nil
	}
	_, err = g.gs[o].recordRun(ctx, ino, sec, meta.BlockRange{First: p.first, End: p.end})
	if errors.Is(err, errScattered) {
		g.fillWhole(ino, sec)
		return nil
	}
	return err
}

// fillWhole fetches every block of ino in the background, in pieces dealt
// among the gateways, without recording runs, and records the file cached
// at the end: for a file whose runs no longer fit its gateway section.
// Blocks other readers are fetching are waited for, not fetched again.
// One such fill runs per file.
func (g *Group) fillWhole(ino meta.Ino, sec *meta.GatewayInfo) {
	g.mu.Lock()
	if g.scattered[ino] {
		g.mu.Unlock()
		return
	}
	g.scattered[ino] = true
	g.mu.Unlock()
	g.bg.Add(1)
	go func() {
		defer g.bg.Done()
		defer func() {
			g.mu.Lock()
			delete(g.scattered, ino)
			g.mu.Unlock()
		}()
		ctx := g.bgCtx
		owner := g.gs[g.Owner(ino)]
		in, err := owner.meta.GetAttr(ctx, ino)
		if err != nil || in.Gateway == nil || in.Gateway.State == meta.CacheCached {
			return
		}
		bs, nb := geometry(in, sec)
		step := g.pieceBlocks(bs) * uint64(len(g.gs))
		for pos := uint64(0); pos < nb; pos += step {
			mine, theirs := g.fl.claim(ino, []meta.BlockRange{{First: pos, End: min(pos+step, nb)}}, g.pieceBlocks(bs))
			errs := make(chan error, len(mine))
			for i, p := range mine {
				go func() { errs <- g.fetchPiece(ctx, ino, sec, p, i, bs, false) }()
			}
			failed := false
			for range mine {
				failed = <-errs != nil || failed
			}
			for _, p := range theirs {
				select {
				case <-p.done:
				case <-ctx.Done():
					return
				}
				failed = failed || p.err != nil
			}
			if failed {
				return
			}
		}
		_, _ = owner.recordRun(ctx, ino, sec, meta.BlockRange{First: 0, End: nb})
	}()
}

// prefetch starts what the fileset's prefetch setting adds to a fetch of
// blocks [first, end): see Fetch.
func (g *Group) prefetch(ctx context.Context, ino meta.Ino, sec *meta.GatewayInfo, bs int64, first, end, nb uint64) {
	f, err := g.gs[g.Owner(ino)].meta.Fileset(ctx, sec.Fileset)
	if err != nil {
		return // no setting to follow: fetch only what was asked
	}
	switch f.Prefetch {
	case meta.PrefetchRange:
		w := uint64(max(1, (g.Window+bs-1)/bs))
		if end < nb {
			g.fillBackground(ino, end, min(end+w, nb))
		}
	case meta.PrefetchWhole:
		g.fillBackground(ino, 0, nb)
	}
}

// fillBackground fetches the missing blocks of [first, end) of ino in the
// background, a piece at a time on each gateway (pieces dealt round-robin
// from the owner), skipping blocks that are cached or being fetched. It
// stops at the first error (home down: the next reader's miss tries
// again) and when the Group closes.
func (g *Group) fillBackground(ino meta.Ino, first, end uint64) {
	g.bg.Add(1)
	go func() {
		defer g.bg.Done()
		ctx := g.bgCtx
		sem := make(chan struct{}, len(g.gs))
		var wg sync.WaitGroup
		defer wg.Wait()
		var mu sync.Mutex
		var failed bool
		for i := 0; ; i++ {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			mu.Lock()
			stop := failed
			mu.Unlock()
			if stop {
				return
			}
			in, err := g.gs[g.Owner(ino)].meta.GetAttr(ctx, ino)
			if err != nil || in.Gateway == nil || in.Gateway.State == meta.CacheCached || !in.IsRegular() {
				return
			}
			sec := in.Gateway
			bs, nb := geometry(in, sec)
			p := g.fl.next(ino, meta.MissingRanges(sec.Cached, first, min(end, nb)), g.pieceBlocks(bs))
			if p == nil {
				return
			}
			first = p.end
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				if err := g.fetchPiece(ctx, ino, sec, p, i, bs, true); err != nil {
					mu.Lock()
					failed = true
					mu.Unlock()
				}
			}()
		}
	}()
}
