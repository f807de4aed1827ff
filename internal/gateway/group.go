package gateway

import (
	"context"
	"fmt"
	"sync"

	"tessera/internal/meta"
)

// Group is the gateways of one cluster as a mount sees them. Every request
// goes to the gateway owning the inode (Owner, member.go). A fetch of a large file is split: the owner cuts the file into
// ranges of RangeSize bytes (whole blocks) and deals them round-robin to
// every gateway, starting with itself; they read home in parallel and
// store their ranges, and the owner records the file cached once all are
// in. The caller waits for the fetch it asked for.
type Group struct {
	gs    []Member
	names []string // what ownership hashes over (member.go)
	self  int      // the member doing every request's work, or -1
	// RangeSize is the size of the ranges a large fetch is cut into; a
	// file no larger is fetched by its owner alone. Default 16 MiB.
	RangeSize int64
}

// NewGroup returns the group of gs (at least one).
func NewGroup(gs ...*Ingester) *Group {
	ms, names := make([]Member, len(gs)), make([]string, len(gs))
	for i, x := range gs {
		ms[i], names[i] = x, fmt.Sprintf("gateway-%d", i)
	}
	return NewGroupOf(names, ms, -1)
}

// Close closes every gateway's home stores.
func (g *Group) Close() error {
	for _, x := range g.gs {
		if c, ok := x.(interface{ Close() error }); ok {
			c.Close()
		}
	}
	return nil
}

// ListDir asks the owner of dir.
func (g *Group) ListDir(ctx context.Context, dir meta.Ino) (meta.Inode, error) {
	return g.gs[g.Owner(dir)].ListDir(ctx, dir)
}

// Revalidate asks the owner of ino.
func (g *Group) Revalidate(ctx context.Context, ino meta.Ino, force bool) (bool, error) {
	return g.gs[g.Owner(ino)].Revalidate(ctx, ino, force)
}

// Fetch fetches [off, off+n) of ino: through its owner alone for a range
// of at most RangeSize bytes, else split among all the gateways.
func (g *Group) Fetch(ctx context.Context, ino meta.Ino, off, n int64) (meta.Inode, error) {
	o := g.Owner(ino)
	owner, ok := g.gs[o].(*Ingester)
	if !ok { // a remote owner splits and records itself
		return g.gs[o].Fetch(ctx, ino, off, n)
	}
	in, err := owner.meta.GetAttr(ctx, ino)
	if err != nil {
		return meta.Inode{}, fmt.Errorf("fetch inode %d: %w", ino, err)
	}
	sec, err := section(in)
	if err != nil {
		return meta.Inode{}, fmt.Errorf("fetch inode %d: %w", ino, err)
	}
	end := min(off+n, int64(sec.HomeSize))
	rs := g.RangeSize
	if bs := int64(in.BlockSize); bs > 0 && rs%bs != 0 {
		rs += bs - rs%bs // whole blocks: no two gateways write one block
	}
	if len(g.gs) == 1 || sec.State == meta.CacheCached || end-off <= rs {
		return owner.Fetch(ctx, ino, off, n)
	}
	start := off
	if bs := int64(in.BlockSize); bs > 0 {
		start -= start % bs
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for i, pos := 0, start; pos < end; i, pos = i+1, pos+rs {
		x := g.gs[(o+i)%len(g.gs)]
		wg.Add(1)
		go func(pos int64) {
			defer wg.Done()
			if err := x.FetchData(ctx, ino, pos, min(rs, end-pos)); err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		}(pos)
	}
	wg.Wait()
	if first != nil {
		return meta.Inode{}, first
	}
	state := meta.CachePartial
	if start == 0 && end >= int64(sec.HomeSize) {
		state = meta.CacheCached
	}
	return owner.record(ctx, ino, sec, state)
}
