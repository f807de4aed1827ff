package gwrpc

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"

	"tessera/internal/auth"
	"tessera/internal/gateway"
	gwpb "tessera/internal/gateway/gwrpc/gwpb"
	"tessera/internal/meta"
	"tessera/internal/meta/metarpc"
	pb "tessera/internal/meta/metarpc/metapb"
)

// Who may call what on a gateway's port. Mounts (and admins' tools) ask
// the owner of an inode; only gateways (and admins) store ranges for
// another gateway's split fetch. Confined identities are refused, as the
// meta service refuses them the fileset calls: an inode number reaches
// across the whole namespace.
var (
	mountRoles = []auth.Role{auth.RoleClientRW, auth.RoleClientRO, auth.RoleGateway, auth.RoleAdmin}
	peerRoles  = []auth.Role{auth.RoleGateway, auth.RoleAdmin}
)

// server answers the Gateway service with the process's group (which
// changes as gateways come and go) and its own Ingester.
type server struct {
	gwpb.UnimplementedGatewayServer
	self  *gateway.Ingester
	group *atomic.Pointer[gateway.Group]
	// fresh brings the group up to the live list before every fetch (a
	// gateway that joined since this one's last heartbeat takes its
	// share of the fetch and of the prefetch it starts, however small
	// the read that missed); an error leaves the group as it is.
	fresh func(ctx context.Context)
}

// allow returns nil when the caller's identity is one of roles and not
// confined, else the status refusing it.
func allow(ctx context.Context, method string, roles []auth.Role) error {
	id, ok := auth.FromContext(ctx)
	if !ok {
		return metarpc.StatusOf(fmt.Errorf("gateway %s: %w", method, auth.ErrUnauthenticated))
	}
	if !slices.Contains(roles, id.Role) {
		return metarpc.StatusOf(fmt.Errorf("gateway %s: %w: %s may not call it (roles %v may)", method, auth.ErrDenied, id, roles))
	}
	if id.Root != "" && id.Root != "/" {
		return metarpc.StatusOf(fmt.Errorf("gateway %s: %w: %s is confined to a subtree", method, auth.ErrDenied, id))
	}
	return nil
}

func inodeReply(in meta.Inode, err error) (*pb.Inode, error) {
	if err != nil {
		return nil, metarpc.StatusOf(err)
	}
	return metarpc.InodeToPB(in), nil
}

// maxOffset bounds a range's offset and length (2^62: past any file, and
// off+n cannot overflow).
const maxOffset = 1 << 62

// checkRange refuses a range a file cannot have.
func checkRange(off, n int64) error {
	if off < 0 || n < 0 || off > maxOffset || n > maxOffset {
		return fmt.Errorf("range [%d, +%d): %w", off, n, meta.ErrInvalid)
	}
	return nil
}

// ListDir serves the Gateway service's ListDir.
func (s *server) ListDir(ctx context.Context, r *pb.InoRequest) (*pb.Inode, error) {
	if err := allow(ctx, "ListDir", mountRoles); err != nil {
		return nil, err
	}
	return inodeReply(s.group.Load().ListDir(ctx, meta.Ino(r.GetIno())))
}

// Fetch serves the Gateway service's Fetch: this gateway splits and
// records (it is the owner the caller found).
func (s *server) Fetch(ctx context.Context, r *gwpb.FetchRequest) (*pb.Inode, error) {
	if err := allow(ctx, "Fetch", mountRoles); err != nil {
		return nil, err
	}
	if err := checkRange(r.GetOff(), r.GetN()); err != nil {
		return nil, metarpc.StatusOf(err)
	}
	if s.fresh != nil {
		s.fresh(ctx)
	}
	return inodeReply(s.group.Load().Fetch(ctx, meta.Ino(r.GetIno()), r.GetOff(), r.GetN()))
}

// FetchData serves the Gateway service's FetchData: one range of
// another gateway's split fetch, stored by this one's Ingester.
func (s *server) FetchData(ctx context.Context, r *gwpb.FetchRequest) (*pb.Empty, error) {
	if err := allow(ctx, "FetchData", peerRoles); err != nil {
		return nil, err
	}
	if err := checkRange(r.GetOff(), r.GetN()); err != nil {
		return nil, metarpc.StatusOf(err)
	}
	if err := s.self.FetchData(ctx, meta.Ino(r.GetIno()), r.GetOff(), r.GetN()); err != nil {
		return nil, metarpc.StatusOf(err)
	}
	return &pb.Empty{}, nil
}

// Revalidate serves the Gateway service's Revalidate.
func (s *server) Revalidate(ctx context.Context, r *gwpb.RevalidateRequest) (*gwpb.RevalidateReply, error) {
	if err := allow(ctx, "Revalidate", mountRoles); err != nil {
		return nil, err
	}
	changed, err := s.group.Load().Revalidate(ctx, meta.Ino(r.GetIno()), r.GetForce())
	if err != nil {
		return nil, metarpc.StatusOf(err)
	}
	return &gwpb.RevalidateReply{Changed: changed}, nil
}
