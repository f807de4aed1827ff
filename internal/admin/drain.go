package admin

import (
	"context"
	"errors"
	"fmt"
	"time"

	"tessera/internal/block"
	"tessera/internal/clock"
	"tessera/internal/meta"
)

// DrainOptions configure Drain.
type DrainOptions struct {
	// Wait makes Drain return only once the server holds no block a
	// recipe refers to (the mover copied every one away and removed it
	// there), reporting progress meanwhile; without it Drain only marks
	// the server draining.
	Wait bool
	// Poll is the time between two counts of what the server still holds
	// [DefaultDrainPoll].
	Poll time.Duration
	// Clock times the polls (clock.Real when nil).
	Clock clock.Clock
}

// DefaultDrainPoll is how often a waiting Drain counts what is left: each
// count lists the server and walks the recipes.
const DefaultDrainPoll = 2 * time.Second

// DrainReport says what a waiting Drain saw.
type DrainReport struct {
	Map meta.ServerMap // after the server was marked draining
	// Blocks and Bytes are the live blocks the server held when the drain
	// began (what the mover had to move away).
	Blocks, Bytes int64
}

// ErrDrainStopped is returned by a waiting Drain whose server stopped
// draining (undrained or removed by someone else) before it was empty.
var ErrDrainStopped = errors.New("the server is no longer draining")

// Drain marks server id draining: it takes no new blocks and the mover
// copies its blocks to their placement and then removes them there. With
// opts.Wait it waits until the server holds no live block, reporting
// (Progress, phase "move") how many of the live blocks it held at the
// start have gone; a wait that cannot end is refused before it begins: one
// for a drain that would leave fewer servers up than the replication
// factor.
func Drain(ctx context.Context, c *Cluster, id string, opts DrainOptions) (DrainReport, error) {
	var r DrainReport
	m, err := c.Meta.Servers(ctx)
	if err != nil {
		return r, fmt.Errorf("block-server map: %w", err)
	}
	srv, ok := findServer(m, id)
	if !ok {
		return r, fmt.Errorf("server %q: %w", id, meta.ErrNotFound)
	}
	up := 0
	for _, s := range m.Servers {
		if s.ID != id && s.State == meta.StateUp {
			up++
		}
	}
	if opts.Wait && up < m.Replicas {
		return r, fmt.Errorf("cannot drain %s: %d other server(s) up, fewer than the replication factor %d "+
			"(every block keeps its copy there); add a server first", id, up, m.Replicas)
	}
	if r.Map, err = c.Meta.SetServerState(ctx, id, meta.StateDraining); err != nil {
		return r, err
	}
	if !opts.Wait {
		return r, nil
	}
	bs, err := c.Dial(srv)
	if err != nil {
		return r, fmt.Errorf("block server %s at %s: %w", id, srv.Addr, err)
	}
	clk := clock.Or(opts.Clock)
	poll := opts.Poll
	if poll <= 0 {
		poll = DefaultDrainPoll
	}
	p := Progress{Op: "drain", Phase: "move"}
	for first := true; ; first = false {
		n, b, err := LiveHeld(ctx, c.Meta, bs)
		if err != nil {
			return r, fmt.Errorf("drain %s: %w", id, err)
		}
		if first {
			r.Blocks, r.Bytes = n, b
			p.Total, p.TotalBytes = n, b
		}
		// Blocks written to the server before it was marked may still
		// become live (a late commit): the total grows with them.
		p.Total, p.TotalBytes = max(p.Total, n), max(p.TotalBytes, b)
		p.Done, p.Bytes = p.Total-n, p.TotalBytes-b
		c.report(p)
		if n == 0 {
			return r, nil
		}
		if err := clock.Sleep(ctx, clk, poll); err != nil {
			return r, err
		}
		m, err := c.Meta.Servers(ctx)
		if err != nil {
			return r, fmt.Errorf("block-server map: %w", err)
		}
		if s, ok := findServer(m, id); !ok || s.State != meta.StateDraining && s.State != meta.StateDown {
			state := "removed"
			if ok {
				state = s.State
			}
			return r, fmt.Errorf("drain %s: %w (now %s) with %d live block(s) left on it", id, ErrDrainStopped, state, n)
		}
	}
}

// LiveHeld counts the blocks bs holds that a recipe refers to, and their
// bytes: what a drained server must no longer hold before it is removed.
func LiveHeld(ctx context.Context, api meta.API, bs block.Lister) (blocks, bytes int64, err error) {
	held := map[block.Hash]int64{}
	err = bs.List(ctx, func(info block.Info) error { held[info.Hash] = info.Size; return nil })
	if err != nil {
		return 0, 0, fmt.Errorf("list the server's blocks: %w", err)
	}
	err = api.WalkBlocks(ctx, func(_ meta.Ino, _ uint64, h block.Hash) error {
		if size, ok := held[h]; ok {
			blocks++
			bytes += size
			delete(held, h)
		}
		return nil
	})
	if err != nil {
		return 0, 0, fmt.Errorf("walk recipes: %w", err)
	}
	return blocks, bytes, nil
}

// findServer returns server id of m.
func findServer(m meta.ServerMap, id string) (meta.Server, bool) {
	for _, s := range m.Servers {
		if s.ID == id {
			return s, true
		}
	}
	return meta.Server{}, false
}
