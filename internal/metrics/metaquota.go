package metrics

import (
	"context"
	"time"

	"tessera/internal/meta"
)

// The metrics wrapper's meta.QuotaAPI, counted and passed on through
// meta.Forward.

var _ meta.QuotaAPI = (*metaAPI)(nil)

// SetQuota implements meta.QuotaAPI.
func (a *metaAPI) SetQuota(ctx context.Context, q meta.Quota) (out meta.Quota, err error) {
	defer a.m.done("set_quota", time.Now(), &err)
	return a.fwd.SetQuota(ctx, q)
}

// Quota implements meta.QuotaAPI.
func (a *metaAPI) Quota(ctx context.Context, dir meta.Ino) (out meta.Quota, err error) {
	defer a.m.done("quota", time.Now(), &err)
	return a.fwd.Quota(ctx, dir)
}

// Quotas implements meta.QuotaAPI.
func (a *metaAPI) Quotas(ctx context.Context) (out []meta.Quota, err error) {
	defer a.m.done("quotas", time.Now(), &err)
	return a.fwd.Quotas(ctx)
}

// QuotaOf implements meta.QuotaAPI.
func (a *metaAPI) QuotaOf(ctx context.Context, ino meta.Ino) (out meta.Quota, err error) {
	defer a.m.done("quota_of", time.Now(), &err)
	return a.fwd.QuotaOf(ctx, ino)
}

// RemoveQuota implements meta.QuotaAPI.
func (a *metaAPI) RemoveQuota(ctx context.Context, dir meta.Ino) (err error) {
	defer a.m.done("remove_quota", time.Now(), &err)
	return a.fwd.RemoveQuota(ctx, dir)
}
