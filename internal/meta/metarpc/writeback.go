package metarpc

import (
	"time"

	"tessera/internal/meta"
	pb "tessera/internal/meta/metarpc/metapb"
)

// The write-back queue's conversions (meta.WritebackAPI, issue 14); the
// client's methods and the server's handlers are generated
// (zz_client_gen.go, zz_server_gen.go).

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

func wbOpListOut(ops []meta.WBOp) *pb.WBOpList {
	out := &pb.WBOpList{}
	for _, op := range ops {
		out.Ops = append(out.Ops, wbOpOut(op))
	}
	return out
}

// wbStatsOut carries the first maxWBOps failed operations: the count is
// in Depth; status shows the first ones.
func wbStatsOut(st meta.WBStats) *pb.WBStats {
	out := &pb.WBStats{Depth: int64(st.Depth), Oldest: st.Oldest}
	for i, op := range st.Failed {
		if i == maxWBOps {
			break
		}
		out.Failed = append(out.Failed, wbOpOut(op))
	}
	return out
}

func claimOut(req meta.ClaimReq) *pb.ClaimWritebackRequest {
	return &pb.ClaimWritebackRequest{Root: uint64(req.Root), Owner: req.Owner, Shard: int32(req.Shard),
		Shards: int32(req.Shards), Ttl: int64(req.TTL), Before: req.Before, Limit: int32(req.Limit)}
}

func claimIn(r *pb.ClaimWritebackRequest) (meta.ClaimReq, error) {
	if r.GetLimit() > maxWBOps {
		return meta.ClaimReq{}, badf("claim_writeback.limit %d, max %d", r.GetLimit(), maxWBOps)
	}
	return meta.ClaimReq{Root: meta.Ino(r.GetRoot()), Owner: r.GetOwner(), Shard: int(r.GetShard()),
		Shards: int(r.GetShards()), TTL: time.Duration(r.GetTtl()), Before: r.GetBefore(), Limit: int(r.GetLimit())}, nil
}
