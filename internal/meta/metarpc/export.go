package metarpc

import (
	"context"

	"google.golang.org/grpc"

	"tessera/internal/meta"
	pb "tessera/internal/meta/metarpc/metapb"
)

// What other roles' RPC packages (gateway/gwrpc) share with this one: a
// connection dialed as Dial dials, a call classified as the meta calls are,
// the meta wire form of an inode and of an API error. Their services are
// served with ServeWith.

// Conn returns the client's connection, for the stubs of another service
// served with ServeWith at the same address.
func (c *Client) Conn() grpc.ClientConnInterface { return c.cc }

// Invoke runs one unary call of another service over c's connection with
// the protocol's metadata, and classifies its error as c's own calls are
// (the API error the server sent, meta.ErrUnreachable, meta.ErrReplyLost,
// auth errors, meta.ErrIO).
func (c *Client) Invoke(ctx context.Context, method string, rpc func(ctx context.Context, opts ...grpc.CallOption) error) error {
	return c.call(ctx, method, rpc)
}

// InodeToPB is the wire form of an inode.
func InodeToPB(in meta.Inode) *pb.Inode { return inodeOut(in) }

// InodeFromPB decodes an inode from the wire, checking its fields.
func InodeFromPB(p *pb.Inode) (meta.Inode, error) { return inodeIn(p) }

// StatusOf encodes an API error as a gRPC status the clients of this
// package decode (nil stays nil).
func StatusOf(err error) error { return statusOf(err) }
