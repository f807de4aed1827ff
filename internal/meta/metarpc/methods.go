package metarpc

import (
	"context"

	"google.golang.org/grpc"

	"tessera/internal/block"
	"tessera/internal/meta"
	pb "tessera/internal/meta/metarpc/metapb"
)

// unary runs one method: send req, decode the reply with dec.
func unary[Req, Rep any, T any](c *Client, ctx context.Context, method string,
	fn func(ctx context.Context, req Req, opts ...grpc.CallOption) (Rep, error), req Req, dec func(Rep) (T, error)) (T, error) {
	var rep Rep
	err := c.call(ctx, method, func(ctx context.Context, opts ...grpc.CallOption) (err error) {
		rep, err = fn(ctx, req, opts...)
		return err
	})
	if err != nil {
		var zero T
		return zero, err
	}
	v, err := dec(rep)
	if err != nil {
		return v, c.ioErr(method, err)
	}
	return v, nil
}

func none(*pb.Empty) (struct{}, error) { return struct{}{}, nil }

// The client's methods of every interface of meta's API, optional ones
// included, are generated (zz_client_gen.go) from the interfaces and the
// protocol: each sends its call over the RPC of its name (or the one its
// //tessera:rpc directive names), its parameters converted into the
// request by the conversions of convert.go and the files of each concern
// (rpc.go of wrapgen states the convention). Written here by hand:
// ListBlocks, WalkBlocks (a walk of ListBlocks pages), CloseSession (it
// drops the session's stream) and Callbacks (callbacks.go, over a stream).
//
//go:generate go run tessera/internal/meta/wrapgen -type *Client -recv c -ifaces api,optional -style client -o zz_client_gen.go

type refPage struct {
	refs []meta.BlockRef
	more bool
}

// ListBlocks implements meta.BlockLister: one page per call.
func (c *Client) ListBlocks(ctx context.Context, afterIno meta.Ino, afterIndex uint64, limit int) ([]meta.BlockRef, bool, error) {
	p, err := unary(c, ctx, "ListBlocks", c.mc.ListBlocks, &pb.ListBlocksRequest{AfterIno: uint64(afterIno), AfterIndex: afterIndex, Limit: int64(limit)},
		func(r *pb.ListBlocksReply) (refPage, error) {
			refs, more, err := refsIn(r)
			return refPage{refs, more}, err
		})
	return p.refs, p.more, err
}

// WalkBlocks implements meta.API, one ListBlocks page per call, calling fn
// between calls.
func (c *Client) WalkBlocks(ctx context.Context, fn func(ino meta.Ino, index uint64, h block.Hash) error) error {
	return meta.WalkLister(ctx, c, fn)
}

// CloseSession implements meta.API.
func (c *Client) CloseSession(ctx context.Context, id meta.SessionID) error {
	c.streams.drop(id)
	s := &Client{conn: c.conn, session: id}
	_, err := unary(s, ctx, "CloseSession", s.mc.CloseSession, &pb.Empty{}, none)
	return err
}
