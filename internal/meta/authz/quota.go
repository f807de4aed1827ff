package authz

import (
	"context"
	"fmt"
	"syscall"

	"tessera/internal/meta"
)

// The quota methods (meta.QuotaAPI). Setting and removing a quota is
// administration (logged); reading one is reading the namespace, so a
// confined identity reads the quotas of its own subtree (its inode
// numbers mapped) and may not list every quota of the cluster.

var _ meta.QuotaAPI = (*view)(nil)

// quotas returns the service's quota half.
func (v *view) quotas(method string) (meta.QuotaAPI, error) {
	qa, ok := v.a.svc.(meta.QuotaAPI)
	if !ok {
		return nil, fmt.Errorf("meta %s: the service has no quotas: %w", method, syscall.ENOTSUP)
	}
	return qa, nil
}

// SetQuota implements meta.QuotaAPI; it is logged with who asked.
func (v *view) SetQuota(ctx context.Context, q meta.Quota) (meta.Quota, error) {
	c, err := v.a.authorize(ctx, "SetQuota")
	if err != nil {
		return meta.Quota{}, err
	}
	qa, err := v.quotas("SetQuota")
	if err != nil {
		return meta.Quota{}, err
	}
	out, err := qa.SetQuota(ctx, q)
	v.a.admin(ctx, c.id, "SetQuota", err, "dir", uint64(q.Dir), "max_bytes", q.MaxBytes, "max_inodes", q.MaxInodes)
	return out, err
}

// Quota implements meta.QuotaAPI.
func (v *view) Quota(ctx context.Context, dir meta.Ino) (meta.Quota, error) {
	c, err := v.a.authorize(ctx, "Quota")
	if err != nil {
		return meta.Quota{}, err
	}
	if dir, err = v.a.in(ctx, c, "Quota", dir); err != nil {
		return meta.Quota{}, err
	}
	qa, err := v.quotas("Quota")
	if err != nil {
		return meta.Quota{}, err
	}
	out, err := qa.Quota(ctx, dir)
	out.Dir = c.out(out.Dir)
	return out, err
}

// Quotas implements meta.QuotaAPI.
func (v *view) Quotas(ctx context.Context) ([]meta.Quota, error) {
	if _, err := v.a.authorize(ctx, "Quotas"); err != nil {
		return nil, err
	}
	qa, err := v.quotas("Quotas")
	if err != nil {
		return nil, err
	}
	return qa.Quotas(ctx)
}

// QuotaOf implements meta.QuotaAPI. The quota may be on a directory
// above a confined caller's root (its project's): its limits and usage are
// what df shows, its directory reads as 0.
func (v *view) QuotaOf(ctx context.Context, ino meta.Ino) (meta.Quota, error) {
	c, err := v.a.authorize(ctx, "QuotaOf")
	if err != nil {
		return meta.Quota{}, err
	}
	if ino, err = v.a.in(ctx, c, "QuotaOf", ino); err != nil {
		return meta.Quota{}, err
	}
	qa, err := v.quotas("QuotaOf")
	if err != nil {
		return meta.Quota{}, err
	}
	out, err := qa.QuotaOf(ctx, ino)
	if err == nil && c.root != 0 {
		if _, ierr := v.a.in(ctx, c, "QuotaOf", out.Dir); ierr != nil {
			out.Dir = 0
		}
	}
	out.Dir = c.out(out.Dir)
	return out, err
}

// RemoveQuota implements meta.QuotaAPI; it is logged with who asked.
func (v *view) RemoveQuota(ctx context.Context, dir meta.Ino) error {
	c, err := v.a.authorize(ctx, "RemoveQuota")
	if err != nil {
		return err
	}
	qa, err := v.quotas("RemoveQuota")
	if err != nil {
		return err
	}
	err = qa.RemoveQuota(ctx, dir)
	v.a.admin(ctx, c.id, "RemoveQuota", err, "dir", uint64(dir))
	return err
}

// CheckQuota implements meta.QuotaAPI: an administrator's (fsck's), as it
// walks a whole tree.
func (v *view) CheckQuota(ctx context.Context, dir meta.Ino) (meta.QuotaCheck, error) {
	if _, err := v.a.authorize(ctx, "CheckQuota"); err != nil {
		return meta.QuotaCheck{}, err
	}
	qa, err := v.quotas("CheckQuota")
	if err != nil {
		return meta.QuotaCheck{}, err
	}
	return qa.CheckQuota(ctx, dir)
}
