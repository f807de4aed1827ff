package authz

import (
	"context"
	"fmt"
	"syscall"

	"tessera/internal/auth"
	"tessera/internal/meta"
)

// The gateway registry (meta.GatewaysAPI). Registering is the gateway
// role's (CacheHome), bound to the caller's name as a block server's is;
// listing is reading the namespace: mounts hash inodes over the list.

var _ meta.GatewaysAPI = (*view)(nil)

func (v *view) gateways(ctx context.Context, method string) (caller, meta.GatewaysAPI, error) {
	c, err := v.a.authorize(ctx, method)
	if err != nil {
		return c, nil, err
	}
	ga, ok := v.a.svc.(meta.GatewaysAPI)
	if !ok {
		return c, nil, fmt.Errorf("meta %s: the service has no gateway registry: %w", method, syscall.ENOTSUP)
	}
	return c, ga, nil
}

// RegisterGateway implements meta.GatewaysAPI. A caller that may not
// administer registers only the gateway its identity names.
func (v *view) RegisterGateway(ctx context.Context, g meta.GatewayNode) ([]meta.GatewayNode, error) {
	c, ga, err := v.gateways(ctx, "RegisterGateway")
	if err != nil {
		return nil, err
	}
	if !c.id.Role.Can(auth.Administer) && g.ID != c.id.Name {
		return nil, v.a.deny(c.id, "RegisterGateway",
			fmt.Errorf("%w: %s may register only the gateway named %q, not %s", auth.ErrDenied, c.id, c.id.Name, meta.Quote(g.ID)))
	}
	return ga.RegisterGateway(ctx, g)
}

// Gateways implements meta.GatewaysAPI.
func (v *view) Gateways(ctx context.Context) ([]meta.GatewayNode, error) {
	_, ga, err := v.gateways(ctx, "Gateways")
	if err != nil {
		return nil, err
	}
	return ga.Gateways(ctx)
}
