package metarpc

import (
	"context"

	"tessera/internal/meta"
	pb "tessera/internal/meta/metarpc/metapb"
)

var (
	_ meta.FilesetReadsAPI = (*Client)(nil)
	_ meta.FilesetReadsAPI = (*Many)(nil)
)

// AddFilesetReads implements meta.FilesetReadsAPI.
func (c *Client) AddFilesetReads(ctx context.Context, root meta.Ino, d meta.FilesetReads) error {
	_, err := unary(c, ctx, "AddFilesetReads", c.mc.AddFilesetReads,
		&pb.FilesetReadsRequest{Root: uint64(root), HitBytes: d.HitBytes, MissBytes: d.MissBytes}, emptyIn)
	return err
}

// AddFilesetReads serves meta.FilesetReadsAPI.AddFilesetReads.
func (s *server) AddFilesetReads(ctx context.Context, r *pb.FilesetReadsRequest) (*pb.Empty, error) {
	ra, ok := s.api.(meta.FilesetReadsAPI)
	if !ok {
		return nil, statusOf(errNoFilesets)
	}
	return emptyReply(ra.AddFilesetReads(ctx, meta.Ino(r.GetRoot()), meta.FilesetReads{HitBytes: r.GetHitBytes(), MissBytes: r.GetMissBytes()}))
}
