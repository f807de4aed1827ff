package authz

import (
	"context"
	"fmt"
	"syscall"

	"tessera/internal/auth"
	"tessera/internal/meta"
)

// The gateway registry (meta.GatewaysAPI). Registering is the gateway
// role's (CacheHome), bound to the caller's name as a block server's is,
// so it is written here; listing is reading the namespace (mounts hash
// inodes over the list), generated (zz_view_gen.go).

// RegisterGateway implements meta.GatewaysAPI. A caller that may not
// administer registers only the gateway its identity names.
func (v *view) RegisterGateway(ctx context.Context, g meta.GatewayNode) ([]meta.GatewayNode, error) {
	c, err := v.a.authorize(ctx, "RegisterGateway")
	if err != nil {
		return nil, err
	}
	ga, ok := v.a.svc.(meta.GatewaysAPI)
	if !ok {
		return nil, fmt.Errorf("meta RegisterGateway: the service has no gateway registry: %w", syscall.ENOTSUP)
	}
	if !c.id.Role.Can(auth.Administer) && g.ID != c.id.Name {
		return nil, v.a.deny(c.id, "RegisterGateway",
			fmt.Errorf("%w: %s may register only the gateway named %q, not %s", auth.ErrDenied, c.id, c.id.Name, meta.Quote(g.ID)))
	}
	return ga.RegisterGateway(ctx, g)
}
