package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	"tessera/internal/block"
	"tessera/internal/meta"
)

// runServer is `tessera server list|drain ID|undrain ID|remove ID`.
func runServer(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("server", flag.ContinueOnError)
	cf := addClusterFlags(fs)
	force := fs.Bool("force", false, "remove: even if the server still holds live blocks")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return fmt.Errorf("%w: want list, drain ID, undrain ID or remove ID (see tessera server -h)", errUsage)
	}
	op, ids := pos[0], pos[1:]
	if (op == "list") != (len(ids) == 0) || len(ids) > 1 {
		return fmt.Errorf("%w: want list, drain ID, undrain ID or remove ID", errUsage)
	}
	c, done, err := cf.dial("server")
	if err != nil {
		return err
	}
	defer done()
	var m meta.ServerMap
	switch op {
	case "list":
		if m, err = c.Meta.Servers(ctx); err != nil {
			return err
		}
		printServers(m)
		return nil
	case "drain":
		m, err = c.Meta.SetServerState(ctx, ids[0], meta.StateDraining)
	case "undrain":
		m, err = c.Meta.SetServerState(ctx, ids[0], meta.StateUp)
	case "remove":
		if !*force {
			if err := checkEmpty(ctx, c.Meta, c.Dial, ids[0]); err != nil {
				return err
			}
		}
		m, err = c.Meta.SetServerState(ctx, ids[0], meta.StateRemoved)
	default:
		return fmt.Errorf("%w: unknown server command %q", errUsage, op)
	}
	if err != nil {
		return err
	}
	fmt.Printf("tessera server: %s %s done; epoch %d\n", op, ids[0], m.Epoch)
	return nil
}

// printServers writes the map as a table.
func printServers(m meta.ServerMap) {
	fmt.Printf("epoch: %d\nreplicas: %d\n", m.Epoch, m.Replicas)
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tSTATE\tADDR\tHOST\tRACK\tSITE\tSEEN")
	for _, s := range m.Servers {
		seen := time.Since(time.Unix(0, s.Seen)).Round(100 * time.Millisecond)
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%v ago\n", s.ID, s.State, s.Addr, s.Host, s.Rack, s.Site, seen)
	}
	w.Flush()
}

// checkEmpty fails unless server id is reachable and holds no block a
// recipe refers to (unreferenced blocks are gc's and do not count).
func checkEmpty[B interface {
	List(ctx context.Context, fn func(block.Info) error) error
}](ctx context.Context, api meta.API, dial func(meta.Server) (B, error), id string) error {
	m, err := api.Servers(ctx)
	if err != nil {
		return err
	}
	var srv *meta.Server
	for i := range m.Servers {
		if m.Servers[i].ID == id {
			srv = &m.Servers[i]
		}
	}
	if srv == nil {
		return fmt.Errorf("server %q: %w", id, meta.ErrNotFound)
	}
	held := map[block.Hash]bool{}
	bs, err := dial(*srv)
	if err == nil {
		err = bs.List(ctx, func(info block.Info) error { held[info.Hash] = true; return nil })
	}
	if err != nil {
		return fmt.Errorf("server %s cannot be listed (%v): drain it first, or remove it with --force", id, err)
	}
	n := 0
	err = api.WalkBlocks(ctx, func(_ meta.Ino, _ uint64, h block.Hash) error {
		if held[h] {
			n++
			delete(held, h)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if n > 0 {
		return fmt.Errorf("server %s still holds %d live block(s): drain it first (tessera server drain %s), or remove it with --force", id, n, id)
	}
	return nil
}

// parseInterspersed parses args with fs allowing flags after positional
// arguments (`tessera server drain b1 --meta ADDR`) and returns the
// positional ones.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := parse(fs, args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}
