package up

import (
	"context"
	"fmt"
	"log/slog"

	"tessera/internal/client"
	"tessera/internal/fuse"
	"tessera/internal/meta"
)

// GatewayFunc makes one fileset gateway over the meta service and a
// data-path client of its own (gateway.NewIngester, which cannot be
// called from here: gateway's tessera:// home depends on this package).
// Close, if the gateway has it, is called at shutdown.
type GatewayFunc func(svc *meta.Service, c *client.Client) fuse.Gateway

// startGateways starts cfg.Gateways fileset gateways in the process, each
// with its own data-path client over the process's block servers, and
// returns what the mount asks (nil with none) and how to stop them. A
// request goes to the gateway owning the inode: the inode number modulo
// the gateways (docs/design/2026-11-24-gateway.md).
func startGateways(ctx context.Context, cfg Config, svc *meta.Service, dial client.Dialer, log *slog.Logger) (fuse.Gateway, func(), error) {
	if cfg.Gateways < 0 {
		return nil, nil, fmt.Errorf("--gateways must not be negative, got %d", cfg.Gateways)
	}
	if cfg.Gateways > 0 && cfg.NewGateway == nil {
		return nil, nil, fmt.Errorf("--gateways %d: this program has no gateway", cfg.Gateways)
	}
	var gs owners
	var clients []*client.Client
	stop := func() {
		for _, g := range gs {
			if c, ok := g.(interface{ Close() error }); ok {
				c.Close()
			}
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
		gs = append(gs, cfg.NewGateway(svc, c))
	}
	if len(gs) == 0 {
		return nil, stop, nil
	}
	log.Info("fileset gateways started", "gateways", len(gs))
	return gs, stop, nil
}

// owners sends each request to the gateway owning the inode.
type owners []fuse.Gateway

func (o owners) owner(ino meta.Ino) fuse.Gateway { return o[uint64(ino)%uint64(len(o))] }

// ListDir implements fuse.Gateway.
func (o owners) ListDir(ctx context.Context, dir meta.Ino) (meta.Inode, error) {
	return o.owner(dir).ListDir(ctx, dir)
}

// Fetch implements fuse.Gateway.
func (o owners) Fetch(ctx context.Context, ino meta.Ino, off, n int64) (meta.Inode, error) {
	return o.owner(ino).Fetch(ctx, ino, off, n)
}

// Revalidate implements fuse.Gateway.
func (o owners) Revalidate(ctx context.Context, ino meta.Ino, force bool) (bool, error) {
	return o.owner(ino).Revalidate(ctx, ino, force)
}
