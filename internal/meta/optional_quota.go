package meta

import "context"

// Forward's QuotaAPI (optional.go): each call passed on when the API
// below has quotas, ErrNotSupported when it does not.

var _ QuotaAPI = Forward{}

// SetQuota implements QuotaAPI.
func (f Forward) SetQuota(ctx context.Context, q Quota) (Quota, error) {
	c, err := capability[QuotaAPI](f.Next, "SetQuota")
	if err != nil {
		return Quota{}, err
	}
	return c.SetQuota(ctx, q)
}

// Quota implements QuotaAPI.
func (f Forward) Quota(ctx context.Context, dir Ino) (Quota, error) {
	c, err := capability[QuotaAPI](f.Next, "Quota")
	if err != nil {
		return Quota{}, err
	}
	return c.Quota(ctx, dir)
}

// Quotas implements QuotaAPI.
func (f Forward) Quotas(ctx context.Context) ([]Quota, error) {
	c, err := capability[QuotaAPI](f.Next, "Quotas")
	if err != nil {
		return nil, err
	}
	return c.Quotas(ctx)
}

// QuotaOf implements QuotaAPI.
func (f Forward) QuotaOf(ctx context.Context, ino Ino) (Quota, error) {
	c, err := capability[QuotaAPI](f.Next, "QuotaOf")
	if err != nil {
		return Quota{}, err
	}
	return c.QuotaOf(ctx, ino)
}

// RemoveQuota implements QuotaAPI.
func (f Forward) RemoveQuota(ctx context.Context, dir Ino) error {
	c, err := capability[QuotaAPI](f.Next, "RemoveQuota")
	if err != nil {
		return err
	}
	return c.RemoveQuota(ctx, dir)
}
