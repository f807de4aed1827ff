package gwrpc

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc"

	"tessera/internal/auth"
	"tessera/internal/gateway"
	gwpb "tessera/internal/gateway/gwrpc/gwpb"
	"tessera/internal/meta"
	"tessera/internal/meta/metarpc"
	pb "tessera/internal/meta/metarpc/metapb"
)

// Time a call to a gateway may take. A fetch stores up to a whole file
// read from a home across a WAN, so it gets far longer than a meta call;
// the caller's own deadline, when shorter, wins.
const (
	FetchTimeout   = 30 * time.Minute
	ListDirTimeout = 5 * time.Minute
)

// Remote is a gateway process reached over its Gateway service: a
// gateway.Member. It is safe for concurrent use.
type Remote struct {
	c  *metarpc.Client
	gc gwpb.GatewayClient
	// fallback, when set, stores a range itself when the remote gateway
	// cannot be reached (it died mid-fetch): a split fetch then completes
	// with the gateways left.
	fallback *gateway.Ingester
	// fellBack, when set, is told of each range the fallback stored
	// (the Node logs and counts them: a split that quietly lost a
	// gateway cannot be told from one that never dealt it a piece).
	fellBack func(off, n int64, err error)
}

var _ gateway.Member = (*Remote)(nil)

// Dial connects to the gateway at addr with creds (nil: plain TCP, for
// --insecure clusters). With TLS the server must present a certificate
// of role gateway: an address from the registry is not trusted alone.
func Dial(addr string, creds *auth.Credentials) (*Remote, error) {
	c, err := metarpc.Dial(addr, metarpc.DialOptions{Creds: creds, PeerRoles: []auth.Role{auth.RoleGateway}})
	if err != nil {
		return nil, fmt.Errorf("gateway %s: %w", addr, err)
	}
	return &Remote{c: c, gc: gwpb.NewGatewayClient(c.Conn())}, nil
}

// Addr is the gateway's address.
func (r *Remote) Addr() string { return r.c.Addr() }

// Close closes the connection.
func (r *Remote) Close() error { return r.c.Close() }

// gone reports an error that says the gateway is not there (down, or
// dead before it answered): the request may go to the next gateway.
func gone(err error) bool {
	return errors.Is(err, meta.ErrUnreachable) || errors.Is(err, meta.ErrReplyLost)
}

func withTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < d {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}

func inode(r *Remote, ctx context.Context, method string, call func(ctx context.Context, opts ...grpc.CallOption) (*pb.Inode, error)) (meta.Inode, error) {
	var rep *pb.Inode
	err := r.c.Invoke(ctx, method, func(ctx context.Context, opts ...grpc.CallOption) (err error) {
		rep, err = call(ctx, opts...)
		return err
	})
	if err != nil {
		return meta.Inode{}, err
	}
	in, err := metarpc.InodeFromPB(rep)
	if err != nil {
		return meta.Inode{}, fmt.Errorf("gateway %s %s: a malformed inode: %w (%w)", r.Addr(), method, err, meta.ErrIO)
	}
	return in, nil
}

// ListDir implements gateway.Member.
func (r *Remote) ListDir(ctx context.Context, dir meta.Ino) (meta.Inode, error) {
	ctx, cancel := withTimeout(ctx, ListDirTimeout)
	defer cancel()
	return inode(r, ctx, "ListDir", func(ctx context.Context, opts ...grpc.CallOption) (*pb.Inode, error) {
		return r.gc.ListDir(ctx, &pb.InoRequest{Ino: uint64(dir)}, opts...)
	})
}

// Fetch implements gateway.Member.
func (r *Remote) Fetch(ctx context.Context, ino meta.Ino, off, n int64) (meta.Inode, error) {
	ctx, cancel := withTimeout(ctx, FetchTimeout)
	defer cancel()
	return inode(r, ctx, "Fetch", func(ctx context.Context, opts ...grpc.CallOption) (*pb.Inode, error) {
		return r.gc.Fetch(ctx, &gwpb.FetchRequest{Ino: uint64(ino), Off: off, N: n}, opts...)
	})
}

// FetchData implements gateway.Member; with a fallback, a gateway that is
// gone has its range stored by the fallback instead.
func (r *Remote) FetchData(ctx context.Context, ino meta.Ino, off, n int64) error {
	cctx, cancel := withTimeout(ctx, FetchTimeout)
	defer cancel()
	err := r.c.Invoke(cctx, "FetchData", func(ctx context.Context, opts ...grpc.CallOption) error {
		_, err := r.gc.FetchData(ctx, &gwpb.FetchRequest{Ino: uint64(ino), Off: off, N: n}, opts...)
		return err
	})
	if err != nil && gone(err) && r.fallback != nil && ctx.Err() == nil {
		if r.fellBack != nil {
			r.fellBack(off, n, err)
		}
		return r.fallback.FetchData(ctx, ino, off, n)
	}
	return err
}

// Revalidate implements gateway.Member.
func (r *Remote) Revalidate(ctx context.Context, ino meta.Ino, force bool) (bool, error) {
	var rep *gwpb.RevalidateReply
	err := r.c.Invoke(ctx, "Revalidate", func(ctx context.Context, opts ...grpc.CallOption) (err error) {
		rep, err = r.gc.Revalidate(ctx, &gwpb.RevalidateRequest{Ino: uint64(ino), Force: force}, opts...)
		return err
	})
	if err != nil {
		return false, err
	}
	return rep.GetChanged(), nil
}
