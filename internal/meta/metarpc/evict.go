package metarpc

import (
	"context"
	"fmt"
	"syscall"

	"tessera/internal/meta"
	pb "tessera/internal/meta/metarpc/metapb"
)

// Eviction of a fileset file's cached data (meta.EvictAPI, tessera
// fileset evict) and removal of names gone at home (meta.VanishAPI,
// revalidation).

var (
	_ meta.EvictAPI  = (*Client)(nil)
	_ meta.EvictAPI  = (*Many)(nil)
	_ meta.VanishAPI = (*Client)(nil)
	_ meta.VanishAPI = (*Many)(nil)
)

// EvictData implements meta.EvictAPI.
func (c *Client) EvictData(ctx context.Context, ino meta.Ino) (meta.Inode, error) {
	return unary(c, ctx, "EvictData", c.mc.EvictData, &pb.InoRequest{Ino: uint64(ino)}, inodeIn)
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

// RemoveVanished implements meta.VanishAPI.
func (c *Client) RemoveVanished(ctx context.Context, parent meta.Ino, name string, ino meta.Ino, isDir bool) error {
	_, err := unary(c, ctx, "RemoveVanished", c.mc.RemoveVanished,
		&pb.RemoveVanishedRequest{Parent: uint64(parent), Name: name, Ino: uint64(ino), IsDir: isDir}, emptyIn)
	return err
}

// errNoVanish answers RemoveVanished on a service without it.
var errNoVanish = fmt.Errorf("meta service cannot remove vanished names: %w", syscall.ENOTSUP)

// RemoveVanished serves meta.VanishAPI.RemoveVanished.
func (s *server) RemoveVanished(ctx context.Context, r *pb.RemoveVanishedRequest) (*pb.Empty, error) {
	va, ok := s.api.(meta.VanishAPI)
	if !ok {
		return nil, statusOf(errNoVanish)
	}
	return emptyReply(va.RemoveVanished(ctx, meta.Ino(r.Parent), r.Name, meta.Ino(r.Ino), r.IsDir))
}
