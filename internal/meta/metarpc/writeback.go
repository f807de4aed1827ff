package metarpc

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"tessera/internal/meta"
	pb "tessera/internal/meta/metarpc/metapb"
)

// The write-back queue's methods (meta.WritebackAPI, issue 14):
// conversions, the client's methods and the server's handlers.

var _ meta.WritebackAPI = (*Client)(nil)

// maxWBOps bounds the operations one reply carries.
const maxWBOps = 4096

func wbOpOut(op meta.WBOp) *pb.WBOp {
	return &pb.WBOp{Root: uint64(op.Root), Seq: op.Seq, Kind: uint32(op.Kind), New: op.New, Ino: uint64(op.Ino),
		At: op.At, Ver: op.Ver, Path: op.Path, Path2: op.Path2, Mode: op.Mode, Mtime: op.Mtime, Target: op.Target,
		Owner: op.Owner, Until: op.Until, Attempts: op.Attempts, Err: op.Err, Permanent: op.Permanent}
}

func wbOpIn(p *pb.WBOp) (meta.WBOp, error) {
	if p == nil {
		return meta.WBOp{}, badf("write-back op: none")
	}
	if p.Kind < uint32(meta.OpPut) || p.Kind > uint32(meta.OpSetattr) {
		return meta.WBOp{}, badf("write-back op kind %d", p.Kind)
	}
	if len(p.Path) > 1<<16 || len(p.Path2) > 1<<16 || len(p.Target) > meta.MaxTargetLen || len(p.Owner) > 256 || len(p.Err) > 4096 {
		return meta.WBOp{}, badf("write-back op: a field too long")
	}
	return meta.WBOp{Root: meta.Ino(p.Root), Seq: p.Seq, Kind: meta.WBKind(p.Kind), New: p.New, Ino: meta.Ino(p.Ino),
		At: p.At, Ver: p.Ver, Path: p.Path, Path2: p.Path2, Mode: p.Mode, Mtime: p.Mtime, Target: p.Target,
		Owner: p.Owner, Until: p.Until, Attempts: p.Attempts, Err: p.Err, Permanent: p.Permanent}, nil
}

func wbOpsIn(ps []*pb.WBOp) ([]meta.WBOp, error) {
	if len(ps) > maxWBOps {
		return nil, badf("%d write-back ops, max %d", len(ps), maxWBOps)
	}
	var out []meta.WBOp
	for _, p := range ps {
		op, err := wbOpIn(p)
		if err != nil {
			return nil, err
		}
		out = append(out, op)
	}
	return out, nil
}

func wbOpListIn(p *pb.WBOpList) ([]meta.WBOp, error) { return wbOpsIn(p.GetOps()) }

func wbStatsIn(p *pb.WBStats) (meta.WBStats, error) {
	failed, err := wbOpsIn(p.GetFailed())
	return meta.WBStats{Depth: int(p.GetDepth()), Oldest: p.GetOldest(), Failed: failed}, err
}

func tokenIn(p *pb.WritebackTokenReply) (string, error) { return p.GetToken(), nil }

// ClaimWriteback implements meta.WritebackAPI.
func (c *Client) ClaimWriteback(ctx context.Context, req meta.ClaimReq) ([]meta.WBOp, error) {
	return unary(c, ctx, "ClaimWriteback", c.mc.ClaimWriteback, &pb.ClaimWritebackRequest{Root: uint64(req.Root),
		Owner: req.Owner, Shard: int32(req.Shard), Shards: int32(req.Shards), Ttl: int64(req.TTL),
		Before: req.Before, Limit: int32(req.Limit)}, wbOpListIn)
}

// WritebackDone implements meta.WritebackAPI.
func (c *Client) WritebackDone(ctx context.Context, op meta.WBOp, token string) error {
	_, err := unary(c, ctx, "WritebackDone", c.mc.WritebackDone, &pb.WritebackDoneRequest{Op: wbOpOut(op), Token: token}, emptyIn)
	return err
}

// WritebackFailed implements meta.WritebackAPI.
func (c *Client) WritebackFailed(ctx context.Context, op meta.WBOp, cause string, permanent bool, retryAt time.Time) error {
	var at int64
	if !retryAt.IsZero() {
		at = retryAt.UnixNano()
	}
	_, err := unary(c, ctx, "WritebackFailed", c.mc.WritebackFailed, &pb.WritebackFailedRequest{Op: wbOpOut(op),
		Cause: cause, Permanent: permanent, RetryAt: at}, emptyIn)
	return err
}

// WritebackToken implements meta.WritebackAPI.
func (c *Client) WritebackToken(ctx context.Context, ino meta.Ino) (string, error) {
	return unary(c, ctx, "WritebackToken", c.mc.WritebackToken, &pb.InoRequest{Ino: uint64(ino)}, tokenIn)
}

// WritebackStats implements meta.WritebackAPI.
func (c *Client) WritebackStats(ctx context.Context, root meta.Ino) (meta.WBStats, error) {
	return unary(c, ctx, "WritebackStats", c.mc.WritebackStats, &pb.InoRequest{Ino: uint64(root)}, wbStatsIn)
}

// writeback is the served API's write-back half; a service without one
// answers ENOTSUP.
func (s *server) writeback() (meta.WritebackAPI, error) {
	wa, ok := s.api.(meta.WritebackAPI)
	if !ok {
		return nil, statusOf(errNoWriteback)
	}
	return wa, nil
}

var errNoWriteback = fmt.Errorf("meta service has no write-back queue: %w", syscall.ENOTSUP)

// ClaimWriteback serves meta.WritebackAPI.ClaimWriteback.
func (s *server) ClaimWriteback(ctx context.Context, r *pb.ClaimWritebackRequest) (*pb.WBOpList, error) {
	wa, err := s.writeback()
	if err != nil {
		return nil, err
	}
	if r.Limit > maxWBOps {
		return nil, statusOf(badf("claim_writeback.limit %d, max %d", r.Limit, maxWBOps))
	}
	ops, err := wa.ClaimWriteback(ctx, meta.ClaimReq{Root: meta.Ino(r.Root), Owner: r.Owner, Shard: int(r.Shard),
		Shards: int(r.Shards), TTL: time.Duration(r.Ttl), Before: r.Before, Limit: int(r.Limit)})
	if err != nil {
		return nil, statusOf(err)
	}
	out := &pb.WBOpList{}
	for _, op := range ops {
		out.Ops = append(out.Ops, wbOpOut(op))
	}
	return out, nil
}

// WritebackDone serves meta.WritebackAPI.WritebackDone.
func (s *server) WritebackDone(ctx context.Context, r *pb.WritebackDoneRequest) (*pb.Empty, error) {
	wa, err := s.writeback()
	if err != nil {
		return nil, err
	}
	op, err := wbOpIn(r.Op)
	if err != nil {
		return nil, statusOf(err)
	}
	return emptyReply(wa.WritebackDone(ctx, op, r.Token))
}

// WritebackFailed serves meta.WritebackAPI.WritebackFailed.
func (s *server) WritebackFailed(ctx context.Context, r *pb.WritebackFailedRequest) (*pb.Empty, error) {
	wa, err := s.writeback()
	if err != nil {
		return nil, err
	}
	op, err := wbOpIn(r.Op)
	if err != nil {
		return nil, statusOf(err)
	}
	var at time.Time
	if r.RetryAt != 0 {
		at = time.Unix(0, r.RetryAt)
	}
	return emptyReply(wa.WritebackFailed(ctx, op, r.Cause, r.Permanent, at))
}

// WritebackToken serves meta.WritebackAPI.WritebackToken.
func (s *server) WritebackToken(ctx context.Context, r *pb.InoRequest) (*pb.WritebackTokenReply, error) {
	wa, err := s.writeback()
	if err != nil {
		return nil, err
	}
	tok, err := wa.WritebackToken(ctx, meta.Ino(r.Ino))
	if err != nil {
		return nil, statusOf(err)
	}
	return &pb.WritebackTokenReply{Token: tok}, nil
}

// WritebackStats serves meta.WritebackAPI.WritebackStats.
func (s *server) WritebackStats(ctx context.Context, r *pb.InoRequest) (*pb.WBStats, error) {
	wa, err := s.writeback()
	if err != nil {
		return nil, err
	}
	st, err := wa.WritebackStats(ctx, meta.Ino(r.Ino))
	if err != nil {
		return nil, statusOf(err)
	}
	out := &pb.WBStats{Depth: int64(st.Depth), Oldest: st.Oldest}
	for i, op := range st.Failed {
		if i == maxWBOps {
			break // the count is in Depth; status shows the first ones
		}
		out.Failed = append(out.Failed, wbOpOut(op))
	}
	return out, nil
}

// RequestFlush implements meta.WritebackAPI.
func (c *Client) RequestFlush(ctx context.Context, root meta.Ino) error {
	_, err := unary(c, ctx, "RequestFlush", c.mc.RequestFlush, &pb.InoRequest{Ino: uint64(root)}, emptyIn)
	return err
}

// RequestFlush serves meta.WritebackAPI.RequestFlush.
func (s *server) RequestFlush(ctx context.Context, r *pb.InoRequest) (*pb.Empty, error) {
	wa, err := s.writeback()
	if err != nil {
		return nil, err
	}
	return emptyReply(wa.RequestFlush(ctx, meta.Ino(r.Ino)))
}
