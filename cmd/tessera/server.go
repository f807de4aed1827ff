package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"text/tabwriter"
	"time"

	"tessera/internal/admin"
	"tessera/internal/meta"
)

// runServer is `tessera server list|drain ID|undrain ID|remove ID`.
func runServer(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("server", flag.ContinueOnError)
	cf := addClusterFlags(fs)
	force := fs.Bool("force", false, "remove: even if the server still holds live blocks")
	wait := fs.Bool("wait", false, "drain: wait until the server holds no live block, showing progress")
	jsonOut := fs.Bool("json", false, "drain --wait: print progress and the result as JSON objects, one a line, on stdout")
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
	if (*wait || *jsonOut) && op != "drain" {
		return fmt.Errorf("%w: --wait and --json are for server drain, not %s", errUsage, op)
	}
	if *jsonOut && !*wait {
		return fmt.Errorf("%w: server drain --json needs --wait (without it drain only marks the server)", errUsage)
	}
	c, done, err := cf.dial(ctx, "server")
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
		return runDrain(ctx, c, ids[0], *wait, *jsonOut)
	case "undrain":
		m, err = c.Meta.SetServerState(ctx, ids[0], meta.StateUp)
	case "remove":
		if !*force {
			if err := checkEmpty(ctx, c, ids[0]); err != nil {
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
func checkEmpty(ctx context.Context, c *admin.Cluster, id string) error {
	m, err := c.Meta.Servers(ctx)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(m.Servers, func(s meta.Server) bool { return s.ID == id })
	if i < 0 {
		return fmt.Errorf("server %q: %w", id, meta.ErrNotFound)
	}
	bs, err := c.Dial(m.Servers[i])
	var n int64
	if err == nil {
		n, _, err = admin.LiveHeld(ctx, c.Meta, bs)
	}
	if err != nil {
		return fmt.Errorf("server %s cannot be listed (%v): drain it first, or remove it with --force", id, err)
	}
	if n > 0 {
		return fmt.Errorf("server %s still holds %d live block(s): drain it first (tessera server drain %s), or remove it with --force", id, n, id)
	}
	return nil
}

// runDrain is `tessera server drain ID [--wait [--json]]`.
func runDrain(ctx context.Context, c *admin.Cluster, id string, wait, jsonOut bool) error {
	out := newProgressOut(jsonOut)
	if wait {
		c.Progress = out.report
	}
	r, err := admin.Drain(ctx, c, id, admin.DrainOptions{Wait: wait})
	out.finish()
	out.result("drain", map[string]any{"server": id, "epoch": r.Map.Epoch, "blocks": r.Blocks, "bytes": r.Bytes}, err)
	if err != nil || jsonOut {
		return err
	}
	if wait {
		fmt.Printf("tessera server: drain %s done: it holds no live block (%d blocks, %d bytes moved away); epoch %d\n",
			id, r.Blocks, r.Bytes, r.Map.Epoch)
		return nil
	}
	fmt.Printf("tessera server: drain %s done; epoch %d\n", id, r.Map.Epoch)
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
