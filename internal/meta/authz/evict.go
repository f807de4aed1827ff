package authz

import (
	"context"
	"fmt"
	"syscall"

	"tessera/internal/meta"
)

// Eviction (meta.EvictAPI): giving back a fileset file's cached data is
// the caching role's (CacheHome: gateways and admins), across the cluster.

var _ meta.EvictAPI = (*view)(nil)

// EvictData implements meta.EvictAPI.
func (v *view) EvictData(ctx context.Context, ino meta.Ino) (meta.Inode, error) {
	if _, err := v.a.authorize(ctx, "EvictData"); err != nil {
		return meta.Inode{}, err
	}
	ea, ok := v.a.svc.(meta.EvictAPI)
	if !ok {
		return meta.Inode{}, fmt.Errorf("meta EvictData: the service cannot evict: %w", syscall.ENOTSUP)
	}
	return ea.EvictData(ctx, ino)
}
