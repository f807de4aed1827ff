package metarpc

import (
	"context"

	"tessera/internal/block"
	"tessera/internal/meta"
)

// Many's meta methods are generated (zz_many_gen.go): every one is one
// call through around, which makes it on the current process with do and
// fails over while that process is unreachable. WalkBlocks is written by
// hand.

//go:generate go run tessera/internal/meta/wrapgen -type *Many -recv m -ifaces api,optional -next *Client -o zz_many_gen.go

// around makes one call through do; op is not used (the Client names its
// calls itself).
func (m *Many) around(ctx context.Context, _ string, call func(context.Context, *Client) error) error {
	return m.do(ctx, func(c *Client) error { return call(ctx, c) })
}

// WalkBlocks implements meta.API page by page, so that a failover in the
// middle goes on from the page it reached.
func (m *Many) WalkBlocks(ctx context.Context, fn func(ino meta.Ino, index uint64, h block.Hash) error) error {
	return meta.WalkLister(ctx, m, fn)
}
