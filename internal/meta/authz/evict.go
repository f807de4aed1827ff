package authz

import (
	"context"
	"fmt"
	"syscall"

	"tessera/internal/meta"
)

// Eviction (meta.EvictAPI) and removal of names gone at home
// (meta.VanishAPI): changing what the cache holds of home is the caching
// role's (CacheHome: gateways and admins), across the cluster.

var (
	_ meta.EvictAPI  = (*view)(nil)
	_ meta.VanishAPI = (*view)(nil)
)

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

// RemoveVanished implements meta.VanishAPI.
func (v *view) RemoveVanished(ctx context.Context, parent meta.Ino, name string, ino meta.Ino, isDir bool) error {
	if _, err := v.a.authorize(ctx, "RemoveVanished"); err != nil {
		return err
	}
	va, ok := v.a.svc.(meta.VanishAPI)
	if !ok {
		return fmt.Errorf("meta RemoveVanished: the service cannot remove vanished names: %w", syscall.ENOTSUP)
	}
	return va.RemoveVanished(ctx, parent, name, ino, isDir)
}
