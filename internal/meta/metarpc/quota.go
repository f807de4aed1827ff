package metarpc

import (
	"tessera/internal/meta"
	pb "tessera/internal/meta/metarpc/metapb"
)

// The quota conversions (meta.QuotaAPI). The client's methods and the
// server's handlers are generated (zz_client_gen.go, zz_server_gen.go);
// Quota travels as rpc GetQuota (its //tessera:rpc directive). A quota
// the server is asked to set carries usage too; meta.Service.SetQuota
// counts its own and reads only the limits.

// maxQuotas bounds the quotas a list reply may carry.
const maxQuotas = 1 << 20

func quotaOut(q meta.Quota) *pb.Quota {
	return &pb.Quota{Dir: uint64(q.Dir), MaxBytes: q.MaxBytes, MaxInodes: q.MaxInodes, Bytes: q.Bytes, Inodes: q.Inodes}
}

func quotaIn(p *pb.Quota) (meta.Quota, error) {
	return meta.Quota{Dir: meta.Ino(p.GetDir()), MaxBytes: p.GetMaxBytes(), MaxInodes: p.GetMaxInodes(),
		Bytes: p.GetBytes(), Inodes: p.GetInodes()}, nil
}

func quotaListOut(l []meta.Quota) *pb.QuotaList {
	out := &pb.QuotaList{}
	for _, q := range l {
		out.Quotas = append(out.Quotas, quotaOut(q))
	}
	return out
}

func quotaListIn(p *pb.QuotaList) ([]meta.Quota, error) {
	if len(p.GetQuotas()) > maxQuotas {
		return nil, badf("quota_list.quotas: %d, max %d", len(p.GetQuotas()), maxQuotas)
	}
	var out []meta.Quota
	for _, q := range p.GetQuotas() {
		x, _ := quotaIn(q)
		out = append(out, x)
	}
	return out, nil
}

func quotaCheckOut(c meta.QuotaCheck) *pb.QuotaCheck {
	return &pb.QuotaCheck{Quota: quotaOut(c.Quota), WalkBytes: c.WalkBytes, WalkInodes: c.WalkInodes}
}

func quotaCheckIn(p *pb.QuotaCheck) (meta.QuotaCheck, error) {
	q, err := quotaIn(p.GetQuota())
	return meta.QuotaCheck{Quota: q, WalkBytes: p.GetWalkBytes(), WalkInodes: p.GetWalkInodes()}, err
}
