package authz

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"tessera/internal/meta"
)

// The write-back queue's methods (meta.WritebackAPI): claiming and
// settling operations is the gateway role's (CacheHome); reading the
// queue's figures is reading the namespace. All reach across the cluster.

var _ meta.WritebackAPI = (*view)(nil)

func (v *view) writeback(ctx context.Context, method string) (meta.WritebackAPI, error) {
	if _, err := v.a.authorize(ctx, method); err != nil {
		return nil, err
	}
	wa, ok := v.a.svc.(meta.WritebackAPI)
	if !ok {
		return nil, fmt.Errorf("meta %s: the service has no write-back queue: %w", method, syscall.ENOTSUP)
	}
	return wa, nil
}

// ClaimWriteback implements meta.WritebackAPI.
func (v *view) ClaimWriteback(ctx context.Context, req meta.ClaimReq) ([]meta.WBOp, error) {
	wa, err := v.writeback(ctx, "ClaimWriteback")
	if err != nil {
		return nil, err
	}
	return wa.ClaimWriteback(ctx, req)
}

// WritebackDone implements meta.WritebackAPI.
func (v *view) WritebackDone(ctx context.Context, op meta.WBOp, token string) error {
	wa, err := v.writeback(ctx, "WritebackDone")
	if err != nil {
		return err
	}
	return wa.WritebackDone(ctx, op, token)
}

// WritebackFailed implements meta.WritebackAPI.
func (v *view) WritebackFailed(ctx context.Context, op meta.WBOp, cause string, permanent bool, retryAt time.Time) error {
	wa, err := v.writeback(ctx, "WritebackFailed")
	if err != nil {
		return err
	}
	return wa.WritebackFailed(ctx, op, cause, permanent, retryAt)
}

// WritebackToken implements meta.WritebackAPI.
func (v *view) WritebackToken(ctx context.Context, ino meta.Ino) (string, error) {
	wa, err := v.writeback(ctx, "WritebackToken")
	if err != nil {
		return "", err
	}
	return wa.WritebackToken(ctx, ino)
}

// WritebackStats implements meta.WritebackAPI.
func (v *view) WritebackStats(ctx context.Context, root meta.Ino) (meta.WBStats, error) {
	wa, err := v.writeback(ctx, "WritebackStats")
	if err != nil {
		return meta.WBStats{}, err
	}
	return wa.WritebackStats(ctx, root)
}

// RequestFlush implements meta.WritebackAPI.
func (v *view) RequestFlush(ctx context.Context, root meta.Ino) error {
	wa, err := v.writeback(ctx, "RequestFlush")
	if err != nil {
		return err
	}
	return wa.RequestFlush(ctx, root)
}
