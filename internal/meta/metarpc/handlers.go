package metarpc

import (
	"context"
	"fmt"
	"io"
	"syscall"
	"time"

	"tessera/internal/meta"
	pb "tessera/internal/meta/metarpc/metapb"
)

// server implements the protocol's service over a meta.API. Every handler
// decodes its request (a malformed one is meta.ErrInvalid), calls the API
// bound to the call's session, and encodes the reply or the error
// (statusOf). The handlers of every interface of meta's API, optional ones
// included, are generated (zz_server_gen.go) from the interfaces and the
// protocol; an optional interface's handler answers ENOTSUP when the API
// lacks it (unsupported). Those here are by hand: ListBlocks (a walk when
// the API cannot list by page), OpenSession and CloseSession (they run on
// the unbound API) and the Callbacks stream.
//
//go:generate go run tessera/internal/meta/wrapgen -type *server -recv s -ifaces api,optional -style server -o zz_server_gen.go
type server struct {
	unimplemented
	api     meta.API
	cluster ClusterInfo // Hello, ClusterStatus (cluster.go)
}

// maxCallbackWait bounds the wait of one Ack; the Service caps it further
// at a third of its session TTL.
const maxCallbackWait = 10 * time.Minute

// on returns the API a call runs against: bound to the call's session when
// it names one and the API can bind.
func (s *server) on(ctx context.Context) meta.API {
	if id := sessionOf(ctx); id != 0 {
		if b, ok := s.api.(meta.SessionBinder); ok {
			return b.WithSession(id)
		}
	}
	return s.api
}

// unsupported answers a call of method of optional interface iface on a
// service without it.
func unsupported(iface, method string) error {
	return fmt.Errorf("meta service does not offer %s (%s): %w", method, iface, syscall.ENOTSUP)
}

func emptyReply(err error) (*pb.Empty, error) {
	if err != nil {
		return nil, statusOf(err)
	}
	return &pb.Empty{}, nil
}

// ListBlocks serves one page of meta.API.WalkBlocks: meta.BlockLister's
// ListBlocks when the API has it, else a walk that skips to the cursor
// (meta.ListBlocksOf).
func (s *server) ListBlocks(ctx context.Context, r *pb.ListBlocksRequest) (*pb.ListBlocksReply, error) {
	limit, err := intIn("list_blocks.limit", r.Limit)
	if err != nil {
		return nil, statusOf(err)
	}
	refs, more, err := meta.ListBlocksOf(ctx, s.on(ctx), meta.Ino(r.AfterIno), r.AfterIndex, limit)
	if err != nil {
		return nil, statusOf(err)
	}
	return refsOut(refs, more), nil
}

// OpenSession serves meta.API.OpenSession.
func (s *server) OpenSession(ctx context.Context, _ *pb.Empty) (*pb.SessionInfo, error) {
	info, err := s.api.OpenSession(ctx)
	if err != nil {
		return nil, statusOf(err)
	}
	return sessionInfoOut(info), nil
}

// CloseSession serves meta.API.CloseSession for the call's session.
func (s *server) CloseSession(ctx context.Context, _ *pb.Empty) (*pb.Empty, error) {
	return emptyReply(s.api.CloseSession(ctx, sessionOf(ctx)))
}

// Callbacks serves the session's callback stream: one meta.API.Callbacks
// poll per Ack, its batch sent back (proto/tessera/meta/v1/meta.proto).
func (s *server) Callbacks(st pb.SessionsService_CallbacksServer) error {
	ctx := st.Context()
	id := sessionOf(ctx)
	for {
		a, err := st.Recv()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		wait := min(max(time.Duration(a.Wait), 0), maxCallbackWait)
		cbs, err := s.api.Callbacks(ctx, id, a.Seq, wait)
		if err != nil {
			return statusOf(err)
		}
		if err := st.Send(callbacksOut(cbs)); err != nil {
			return err
		}
	}
}
