package up

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"tessera/internal/auth"
	"tessera/internal/client"
	"tessera/internal/fuse"
	"tessera/internal/meta"
)

// GatewayFunc makes the fileset gateways, one per data-path client,
// over the meta service, as the group a mount asks (gateway.NewGroup,
// which cannot be called from here: gateway's tessera:// home depends on
// this package). Close, if the group has it, is called at shutdown.
type GatewayFunc func(svc *meta.Service, cs []*client.Client) fuse.Gateway

// RemoteGatewayFunc makes what a mount asks when the gateways are their
// own processes: gwrpc.NewRouter over the registry m, dialing them with
// creds (nil: plain TCP). Close, if it has it, is called at shutdown.
type RemoteGatewayFunc func(m meta.GatewaysAPI, creds *auth.Credentials) fuse.Gateway

// startGateways starts cfg.Gateways fileset gateways in the process, each
// with its own data-path client over the process's block servers, and
// returns what the mount asks and how to stop them. A request goes to the
// gateway owning the inode: the first by rendezvous hashing of the inode
// over the gateways (docs/design/2026-11-24-gateway.md). With none, the
// mount asks the cluster's gateway processes (cfg.RemoteGateways) if it
// can, else nothing.
func startGateways(ctx context.Context, cfg Config, svc *meta.Service, dial client.Dialer, creds *auth.Credentials, log *slog.Logger) (fuse.Gateway, func(), error) {
	if cfg.Gateways < 0 {
		return nil, nil, fmt.Errorf("--gateways must not be negative, got %d", cfg.Gateways)
	}
	if cfg.Gateways > 0 && cfg.NewGateway == nil {
		return nil, nil, fmt.Errorf("--gateways %d: this program has no gateway", cfg.Gateways)
	}
	var gw fuse.Gateway
	var clients []*client.Client
	beats := func() {}
	stop := func() {
		beats()
		if c, ok := gw.(interface{ Close() error }); ok {
			c.Close()
		}
		for _, c := range clients {
			c.Close(context.Background())
		}
	}
	for i := range cfg.Gateways {
		c, err := client.New(ctx, client.Config{Meta: svc, Dial: dial, Logger: log.With("gateway", i)})
		if err != nil {
			stop()
			return nil, nil, fmt.Errorf("gateway %d: %w", i, err)
		}
		clients = append(clients, c)
	}
	if len(clients) == 0 {
		if cfg.RemoteGateways != nil {
			gw = cfg.RemoteGateways(svc, creds)
		}
		return gw, stop, nil
	}
	gw = cfg.NewGateway(svc, clients)
	if gc, ok := gw.(GatewayCounter); ok {
		beats = startGatewayBeats(svc, gc, cfg.Site, log)
	}
	log.Info("fileset gateways started", "gateways", len(clients))
	return gw, stop, nil
}

// GatewayCounter is implemented by a gateway group of GatewayFunc that
// counts per gateway: one entry per gateway, in order, for the registry.
type GatewayCounter interface {
	GatewayCounters() []meta.GatewayCounters
}

// startGatewayBeats registers the in-process gateways of gc with the meta
// service and heartbeats their counters as gateway processes do, under
// the address meta.GatewayInProcess (never routed to), so that `tessera
// fileset status` shows the same per-gateway lines for both. It returns
// the function that stops the heartbeats and waits for them.
func startGatewayBeats(svc *meta.Service, gc GatewayCounter, site string, log *slog.Logger) func() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	started := time.Now().UnixNano()
	beat := func() {
		for i, c := range gc.GatewayCounters() {
			g := meta.GatewayNode{ID: fmt.Sprintf("up-gateway-%d", i), Addr: meta.GatewayInProcess, Site: site, Started: started, Counters: c}
			if _, err := svc.RegisterGateway(ctx, g); err != nil && ctx.Err() == nil {
				log.Debug("in-process gateway: heartbeat", "gateway", g.ID, "err", err)
			}
		}
	}
	go func() {
		defer close(done)
		t := time.NewTicker(meta.DefaultHeartbeat)
		defer t.Stop()
		for {
			beat()
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return func() { cancel(); <-done }
}
