package metarpc

import (
	"context"
	"fmt"
	"syscall"

	"tessera/internal/meta"
	pb "tessera/internal/meta/metarpc/metapb"
)

// Eviction of a fileset file's cached data (meta.EvictAPI, tessera
// fileset evict).

var (
	_ meta.EvictAPI = (*Client)(nil)
	_ meta.EvictAPI = (*Many)(nil)
)

// EvictData implements meta.EvictAPI.
func (c *Client) EvictData(ctx context.Context, ino meta.Ino) (meta.Inode, error) {
	return unary(c, ctx, "EvictData", c.mc.EvictData, &pb.InoRequest{Ino: uint64(ino)}, inodeIn)
}

// EvictData implements meta.EvictAPI.
func (m *Many) EvictData(ctx context.Context, ino meta.Ino) (meta.Inode, error) {
	return many1(m, ctx, func(c *Client) (meta.Inode, error) { return c.EvictData(ctx, ino) })
}

// errNoEvict answers EvictData on a service without it.
var errNoEvict = fmt.Errorf("meta service cannot evict: %w", syscall.ENOTSUP)

// EvictData serves meta.EvictAPI.EvictData.
func (s *server) EvictData(ctx context.Context, r *pb.InoRequest) (*pb.Inode, error) {
	ea, ok := s.api.(meta.EvictAPI)
	if !ok {
		return nil, statusOf(errNoEvict)
	}
	return inodeReply(ea.EvictData(ctx, meta.Ino(r.Ino)))
}
