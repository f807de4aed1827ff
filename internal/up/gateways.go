package up

import (
	"context"
	"fmt"
	"log/slog"

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
	stop := func() {
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
	log.Info("fileset gateways started", "gateways", len(clients))
	return gw, stop, nil
}
