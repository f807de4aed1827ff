package metarpc

import (
	"context"
	"time"

	"tessera/internal/meta"
)

// Many's meta.WritebackAPI, failing over as its meta.API does.

var _ meta.WritebackAPI = (*Many)(nil)

// ClaimWriteback implements meta.WritebackAPI.
func (m *Many) ClaimWriteback(ctx context.Context, req meta.ClaimReq) ([]meta.WBOp, error) {
	return many1(m, ctx, func(c *Client) ([]meta.WBOp, error) { return c.ClaimWriteback(ctx, req) })
}

// WritebackDone implements meta.WritebackAPI.
func (m *Many) WritebackDone(ctx context.Context, op meta.WBOp, token string) error {
	return m.do(ctx, func(c *Client) error { return c.WritebackDone(ctx, op, token) })
}

// WritebackFailed implements meta.WritebackAPI.
func (m *Many) WritebackFailed(ctx context.Context, op meta.WBOp, cause string, permanent bool, retryAt time.Time) error {
	return m.do(ctx, func(c *Client) error { return c.WritebackFailed(ctx, op, cause, permanent, retryAt) })
}

// WritebackToken implements meta.WritebackAPI.
func (m *Many) WritebackToken(ctx context.Context, ino meta.Ino) (string, error) {
	return many1(m, ctx, func(c *Client) (string, error) { return c.WritebackToken(ctx, ino) })
}

// WritebackStats implements meta.WritebackAPI.
func (m *Many) WritebackStats(ctx context.Context, root meta.Ino) (meta.WBStats, error) {
	return many1(m, ctx, func(c *Client) (meta.WBStats, error) { return c.WritebackStats(ctx, root) })
}

// RequestFlush implements meta.WritebackAPI.
func (m *Many) RequestFlush(ctx context.Context, root meta.Ino) error {
	return m.do(ctx, func(c *Client) error { return c.RequestFlush(ctx, root) })
}
