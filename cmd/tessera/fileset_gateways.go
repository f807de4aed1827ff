package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"tessera/internal/meta"
)

// printGatewayStatus adds the gateway processes to `tessera fileset
// status`: each one's address, site, whether it is live, and what it
// ingested (bytes in all, and the rate between its last two heartbeats),
// fetched and wrote back, as its heartbeat reported (meta.GatewayNode).
// Gateways of `tessera up --gateways N` run inside the mount and report
// the same through the registry (address meta.GatewayInProcess, as
// up-gateway-I), so they get the same lines.
func printGatewayStatus(ctx context.Context, out io.Writer, api meta.API) error {
	ga, ok := api.(meta.GatewaysAPI)
	if !ok {
		return nil
	}
	l, err := ga.Gateways(ctx)
	if err != nil {
		return fmt.Errorf("gateways: %w", err)
	}
	if len(l) == 0 {
		fmt.Fprintf(out, "  gateways    none registered\n")
		return nil
	}
	fmt.Fprintf(out, "  gateways    %d registered\n", len(l))
	for _, g := range l {
		state := "live"
		silent := time.Since(time.Unix(0, g.Seen))
		switch {
		case g.Addr == meta.GatewayInProcess && silent <= meta.GatewayTTL:
			// A gateway of `tessera up --gateways N`: never live for
			// routing, but heard from (its counters are current).
		case !g.Live:
			state = "silent " + silent.Round(time.Second).String()
		}
		site := ""
		if g.Site != "" {
			site = " site " + g.Site
		}
		interval := time.Duration(g.Seen - g.PrevSeen).Round(time.Millisecond)
		if g.PrevSeen == 0 {
			interval = 0
		}
		fmt.Fprintf(out, "    %s %s%s %s: ingested %d bytes, %s/s over the last %v; %d fetches, %d listings, %d write-back ops\n",
			g.ID, g.Addr, site, state, g.Counters.BytesIngested, humanBytes(g.IngestRate()), interval,
			g.Counters.Fetches, g.Counters.Listings, g.Counters.WritebackOps)
	}
	return nil
}
