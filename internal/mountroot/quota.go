package mountroot

import (
	"context"

	"tessera/internal/meta"
)

// The re-rooted meta.QuotaAPI: directories mapped both ways.

var _ meta.QuotaAPI = (*API)(nil)

func (a *API) quota(q meta.Quota, err error) (meta.Quota, error) {
	q.Dir = a.m(q.Dir)
	return q, err
}

// SetQuota implements meta.QuotaAPI.
func (a *API) SetQuota(ctx context.Context, q meta.Quota) (meta.Quota, error) {
	q.Dir = a.m(q.Dir)
	return a.quota(a.fwd().SetQuota(ctx, q))
}

// Quota implements meta.QuotaAPI.
func (a *API) Quota(ctx context.Context, dir meta.Ino) (meta.Quota, error) {
	return a.quota(a.fwd().Quota(ctx, a.m(dir)))
}

// Quotas implements meta.QuotaAPI.
func (a *API) Quotas(ctx context.Context) ([]meta.Quota, error) {
	l, err := a.fwd().Quotas(ctx)
	for i := range l {
		l[i].Dir = a.m(l[i].Dir)
	}
	return l, err
}

// QuotaOf implements meta.QuotaAPI.
func (a *API) QuotaOf(ctx context.Context, ino meta.Ino) (meta.Quota, error) {
	return a.quota(a.fwd().QuotaOf(ctx, a.m(ino)))
}

// CheckQuota implements meta.QuotaAPI.
func (a *API) CheckQuota(ctx context.Context, dir meta.Ino) (meta.QuotaCheck, error) {
	c, err := a.fwd().CheckQuota(ctx, a.m(dir))
	c.Dir = a.m(c.Dir)
	return c, err
}
