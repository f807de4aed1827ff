package metarpc

import (
	"context"

	"tessera/internal/meta"
)

// Many's meta.FilesetAPI, failing over as its meta.API does.

var _ meta.FilesetAPI = (*Many)(nil)

// CreateFileset implements meta.FilesetAPI.
func (m *Many) CreateFileset(ctx context.Context, f meta.Fileset) (meta.Fileset, error) {
	return many1(m, ctx, func(c *Client) (meta.Fileset, error) { return c.CreateFileset(ctx, f) })
}

// Fileset implements meta.FilesetAPI.
func (m *Many) Fileset(ctx context.Context, root meta.Ino) (meta.Fileset, error) {
	return many1(m, ctx, func(c *Client) (meta.Fileset, error) { return c.Fileset(ctx, root) })
}

// Filesets implements meta.FilesetAPI.
func (m *Many) Filesets(ctx context.Context) ([]meta.Fileset, error) {
	return many1(m, ctx, func(c *Client) ([]meta.Fileset, error) { return c.Filesets(ctx) })
}

// DeleteFileset implements meta.FilesetAPI.
func (m *Many) DeleteFileset(ctx context.Context, root meta.Ino) error {
	return m.do(ctx, func(c *Client) error { return c.DeleteFileset(ctx, root) })
}

// IngestDir implements meta.FilesetAPI.
func (m *Many) IngestDir(ctx context.Context, req meta.IngestDirReq) (meta.Inode, error) {
	return many1(m, ctx, func(c *Client) (meta.Inode, error) { return c.IngestDir(ctx, req) })
}

// SetGateway implements meta.FilesetAPI.
func (m *Many) SetGateway(ctx context.Context, ino meta.Ino, g meta.GatewayInfo, ifChange uint64) (meta.Inode, error) {
	return many1(m, ctx, func(c *Client) (meta.Inode, error) { return c.SetGateway(ctx, ino, g, ifChange) })
}
