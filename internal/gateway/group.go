package gateway

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"tessera/internal/meta"
)

// Group is the gateways of one cluster as a mount (or the gateway process
// a mount asked) sees them. Every request goes to the gateway owning the
// inode (Owner, member.go); a remote owner does the work itself. A fetch
// asks for the blocks a reader needs: the owner cuts the missing ones into
// pieces of at most RangeSize bytes (whole blocks), at least one per
// gateway when there are enough blocks, and deals each to the gateway
// with the fewest pieces in flight (deal.go); they read home in parallel
// and store their pieces, and the owner records each piece in the
// inode's cached runs. The caller waits only for the blocks it asked
// for; what follows is the fileset's prefetch setting, fetched in the
// background (see Fetch). A block being fetched is fetched once: other
// readers missing it wait for that fetch.
type Group struct {
	gs    []Member
	names []string // what ownership hashes over (member.go)
	self  int      // the member doing every request's work, or -1
	// RangeSize is the most bytes one piece of a fetch holds (rounded up
	// to whole blocks); a larger fetch is split among the gateways.
	// Default 16 MiB.
	RangeSize int64
	// Window is, per live gateway, how far past a miss a fileset with
	// prefetch "range" fetches in the background (rounded up to whole
	// blocks), and how far the read-ahead goes on when the reader enters
	// that window (readahead.go): three gateways prefetch three Windows,
	// so each keeps its own home reads in flight (on a WAN whose single
	// flows are capped, the flows in flight are the rate). Default 16 MiB.
	Window int64

	st *groupState // shared by the groups Regroup makes of this one
}

// groupState is what a group's fetches share: the pieces in flight, the
// files being fetched whole, the background fetches.
type groupState struct {
	fl        flights
	mu        sync.Mutex
	scattered map[meta.Ino]bool // files being fetched whole (fillWhole)
	bg        sync.WaitGroup
	bgCtx     context.Context
	bgStop    context.CancelFunc
	// turn breaks ties between gateways equally loaded, and load counts
	// each gateway's pieces in flight by name (deal.go); under mu.
	turn uint64
	load map[string]int
	// ahead is the read-ahead of files read in sequence (readahead.go);
	// under mu.
	ahead map[meta.Ino]readAhead
}

// NewGroup returns the group of gs (at least one).
func NewGroup(gs ...*Ingester) *Group {
	ms, names := make([]Member, len(gs)), make([]string, len(gs))
	for i, x := range gs {
		ms[i], names[i] = x, fmt.Sprintf("gateway-%d", i)
	}
	return NewGroupOf(names, ms, -1)
}

// newGroup is NewGroupOf without its checks.
func newGroup(names []string, ms []Member, self int) *Group {
	ctx, stop := context.WithCancel(context.Background())
	return &Group{gs: ms, names: names, self: self, RangeSize: 16 << 20, Window: 16 << 20,
		st: &groupState{bgCtx: ctx, bgStop: stop, scattered: map[meta.Ino]bool{},
			load: map[string]int{}, ahead: map[meta.Ino]readAhead{}}}
}

// Regroup returns a group of other members (the live gateways changed)
// with g's settings, sharing g's fetches in flight and in the background,
// so that a fetch under way is not started again by the new group.
func (g *Group) Regroup(names []string, ms []Member) *Group {
	n := NewGroupOf(names, ms, g.self)
	n.RangeSize, n.Window, n.st = g.RangeSize, g.Window, g.st
	return n
}

// Stop stops the background fetches (of every group Regroup made of
// this one) and waits for them.
func (g *Group) Stop() {
	g.st.bgStop()
	g.st.bg.Wait()
}

// Close stops the background fetches, waits for them, and closes every
// gateway's home stores.
func (g *Group) Close() error {
	g.Stop()
	for _, x := range g.gs {
		if c, ok := x.(interface{ Close() error }); ok {
			c.Close()
		}
	}
	return nil
}

// Idle waits until the background fetches started so far (prefetch) have
// ended, or ctx ends.
func (g *Group) Idle(ctx context.Context) error {
	done := make(chan struct{})
	go func() { g.st.bg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// local returns the member doing the work for ino: its owner, which must
// be an Ingester here (a remote owner is handed the whole request).
func (g *Group) local(ino meta.Ino) *Ingester {
	x, _ := g.gs[g.Owner(ino)].(*Ingester)
	return x
}

// ListDir asks the owner of dir.
func (g *Group) ListDir(ctx context.Context, dir meta.Ino) (meta.Inode, error) {
	return g.gs[g.Owner(dir)].ListDir(ctx, dir)
}

// Due reports whether in is due for revalidation, as the owner of in
// tells (Ingester.Due); true when the owner cannot tell without being
// asked (a gateway of another process: its Revalidate decides).
func (g *Group) Due(ctx context.Context, in *meta.Inode) bool {
	if in == nil {
		return true
	}
	if d, ok := g.gs[g.Owner(in.Ino)].(interface {
		Due(context.Context, *meta.Inode) bool
	}); ok {
		return d.Due(ctx, in)
	}
	return true
}

// Revalidate asks the owner of ino.
func (g *Group) Revalidate(ctx context.Context, ino meta.Ino, force bool) (bool, error) {
	return g.gs[g.Owner(ino)].Revalidate(ctx, ino, force)
}

// Stats returns each gateway's counts, in order (zero for a remote one:
// it reports its own).
func (g *Group) Stats() []Stats {
	out := make([]Stats, len(g.gs))
	for i, x := range g.gs {
		if in, ok := x.(*Ingester); ok {
			out[i] = in.Stats()
		}
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
// other readers are fetching). Once the range's blocks are claimed, and
// while the caller waits for them, it starts what the fileset's prefetch
// setting adds in the background: nothing (none), the read-ahead of a
// sequential reader (range: readahead.go), or the rest of the file
// (whole, split among the gateways as any large fetch). A range past
// home's size is cut there.
func (g *Group) Fetch(ctx context.Context, ino meta.Ino, off, n int64) (meta.Inode, error) {
	owner := g.local(ino)
	if owner == nil { // a remote owner splits, records and prefetches itself
		return g.gs[g.Owner(ino)].Fetch(ctx, ino, off, n)
	}
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
		g.forget(ino)
		return in, nil
	}
	bs, nb := geometry(in, sec)
	first := uint64(off / bs)
	end := min(uint64((min(off, int64(sec.HomeSize))+min(n, int64(sec.HomeSize))+bs-1)/bs), nb)
	ahead := func() { g.prefetch(ctx, ino, sec, bs, first, end, nb) }
	if first < end {
		if err := g.need(ctx, ino, sec, first, end, bs, ahead); err != nil {
			return meta.Inode{}, err
		}
	} else {
		ahead()
	}
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

// need fetches the blocks [first, end) of ino that sec does not hold, in
// shares dealt among the gateways (deal.go), and waits for them; then,
// if set, is called once the blocks are claimed, before the wait (the
// prefetch: the reader's blocks are claimed first, and the read-ahead
// runs while it waits). A piece another reader was fetching that failed
// is tried once more by this one (that reader may merely have given up).
func (g *Group) need(ctx context.Context, ino meta.Ino, sec *meta.GatewayInfo, first, end uint64, bs int64, then func()) error {
	for attempt := 0; ; attempt++ {
		mine, theirs := g.st.fl.claim(ino, g.shares(meta.MissingRanges(sec.Cached, first, end), bs), g.pieceBlocks(bs))
		mine, err := g.unheld(ctx, ino, mine)
		if err != nil {
			return err
		}
		errs := make(chan error, len(mine))
		for _, p := range mine {
			i := g.pick(g.Owner(ino))
			go func() { errs <- g.fetchPiece(ctx, ino, sec, p, i, bs, true) }()
		}
		if then != nil {
			then()
			then = nil
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
		in, err := g.local(ino).meta.GetAttr(ctx, ino)
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

// unheld trims the pieces just claimed of ino to the blocks the file
// still misses, read again after the claim (flights.trim), and returns
// those left to fetch. A piece that finished between the caller's read
// of the cached runs and its claim had recorded its blocks before it
// ended, so this read sees them: without it they were fetched from home
// twice. On an error every piece is ended with it.
func (g *Group) unheld(ctx context.Context, ino meta.Ino, mine []*piece) ([]*piece, error) {
	if len(mine) == 0 {
		return nil, nil
	}
	in, err := g.local(ino).meta.GetAttr(ctx, ino)
	if err == nil {
		_, err = section(in)
	}
	if err != nil {
		err = fmt.Errorf("fetch inode %d: %w", ino, err)
		for _, p := range mine {
			g.st.fl.finish(ino, p, err)
		}
		return nil, err
	}
	sec := in.Gateway
	held := func(b uint64) bool { return sec.State == meta.CacheCached || sec.Holds(b, b+1) }
	left := mine[:0]
	for _, p := range mine {
		if g.st.fl.trim(ino, p, held) {
			left = append(left, p)
		}
	}
	return left, nil
}

// fetchPiece has gateway i (chosen by pick) store piece p, then (record)
// the owner record it, and ends p. A file read at too many scattered
// places to record its runs is fetched whole in the background instead
// (fillWhole); the piece's blocks are stored all the same.
func (g *Group) fetchPiece(ctx context.Context, ino meta.Ino, sec *meta.GatewayInfo, p *piece, i int, bs int64, record bool) (err error) {
	defer func() { g.st.fl.finish(ino, p, err) }()
	err = g.gs[i].FetchData(ctx, ino, int64(p.first)*bs, int64(p.end-p.first)*bs)
	g.done(i)
	if err != nil {
		return err
	}
	if !record {
		return nil
	}
	_, err = g.local(ino).recordRun(ctx, ino, sec, meta.BlockRange{First: p.first, End: p.end})
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
	g.st.mu.Lock()
	if g.st.scattered[ino] {
		g.st.mu.Unlock()
		return
	}
	g.st.scattered[ino] = true
	g.st.mu.Unlock()
	g.st.bg.Add(1)
	go func() {
		defer g.st.bg.Done()
		defer func() {
			g.st.mu.Lock()
			delete(g.st.scattered, ino)
			g.st.mu.Unlock()
		}()
		ctx := g.st.bgCtx
		owner := g.local(ino)
		in, err := owner.meta.GetAttr(ctx, ino)
		if err != nil || in.Gateway == nil || in.Gateway.State == meta.CacheCached {
			return
		}
		bs, nb := geometry(in, sec)
		step := g.pieceBlocks(bs) * uint64(len(g.gs))
		for pos := uint64(0); pos < nb; pos += step {
			run := []meta.BlockRange{{First: pos, End: min(pos+step, nb)}}
			mine, theirs := g.st.fl.claim(ino, g.shares(run, bs), g.pieceBlocks(bs))
			errs := make(chan error, len(mine))
			for _, p := range mine {
				i := g.pick(g.Owner(ino))
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
	f, err := g.local(ino).meta.Fileset(ctx, sec.Fileset)
	if err != nil {
		return // no setting to follow: fetch only what was asked
	}
	switch f.Prefetch {
	case meta.PrefetchRange:
		w := uint64(max(1, (g.Window*int64(len(g.gs))+bs-1)/bs))
		if from, to := g.readAhead(ino, first, end, nb, w); from < to {
			g.fillBackground(ino, from, to)
		}
	case meta.PrefetchWhole:
		g.fillBackground(ino, 0, nb)
	}
}

// fillBackground fetches the blocks of [first, end) of ino that are
// neither cached nor being fetched, in the background: cut into shares
// (deal.go) when it starts, each share fetched as pieces of at most
// RangeSize, up to one piece per gateway at a time, each dealt to the
// least loaded gateway; blocks cached or claimed meanwhile are skipped.
// It stops at the first error (home down: the next reader's miss tries
// again) and when the Group closes.
func (g *Group) fillBackground(ino meta.Ino, first, end uint64) {
	g.st.bg.Add(1)
	go func() {
		defer g.st.bg.Done()
		ctx := g.st.bgCtx
		sem := make(chan struct{}, len(g.gs))
		var wg sync.WaitGroup
		defer wg.Wait()
		var mu sync.Mutex
		var failed bool
		var shares []meta.BlockRange
		for {
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
			in, err := g.local(ino).meta.GetAttr(ctx, ino)
			if err != nil || in.Gateway == nil || in.Gateway.State == meta.CacheCached || !in.IsRegular() {
				return
			}
			sec := in.Gateway
			bs, nb := geometry(in, sec)
			if shares == nil {
				shares = g.shares(g.st.fl.free(ino, meta.MissingRanges(sec.Cached, first, min(end, nb))), bs)
			}
			var p *piece
			for p == nil && len(shares) > 0 {
				s := shares[0]
				if p = g.st.fl.next(ino, meta.MissingRanges(sec.Cached, s.First, min(s.End, nb)), g.pieceBlocks(bs)); p == nil || p.end >= s.End {
					shares = shares[1:]
				} else {
					shares[0].First = p.end
				}
			}
			if p == nil {
				return
			}
			if left, err := g.unheld(ctx, ino, []*piece{p}); err != nil || len(left) == 0 {
				<-sem
				if err != nil {
					return
				}
				continue
			}
			i := g.pick(g.Owner(ino))
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
