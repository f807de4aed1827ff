package metarpc

import (
	"context"
	"fmt"
	"syscall"

	"tessera/internal/meta"
	pb "tessera/internal/meta/metarpc/metapb"
)

// The quota methods (meta.QuotaAPI): conversions, the client's methods,
// Many's and the server's handlers.

var (
	_ meta.QuotaAPI = (*Client)(nil)
	_ meta.QuotaAPI = (*Many)(nil)
)

// maxQuotas bounds the quotas a list reply may carry.
const maxQuotas = 1 << 20

func quotaOut(q meta.Quota) *pb.Quota {
	return &pb.Quota{Dir: uint64(q.Dir), MaxBytes: q.MaxBytes, MaxInodes: q.MaxInodes, Bytes: q.Bytes, Inodes: q.Inodes}
}

func quotaIn(p *pb.Quota) (meta.Quota, error) {
	return meta.Quota{Dir: meta.Ino(p.GetDir()), MaxBytes: p.GetMaxBytes(), MaxInodes: p.GetMaxInodes(),
		Bytes: p.GetBytes(), Inodes: p.GetInodes()}, nil
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

// SetQuota implements meta.QuotaAPI.
func (c *Client) SetQuota(ctx context.Context, q meta.Quota) (meta.Quota, error) {
	return unary(c, ctx, "SetQuota", c.mc.SetQuota, quotaOut(q), quotaIn)
}

// Quota implements meta.QuotaAPI.
func (c *Client) Quota(ctx context.Context, dir meta.Ino) (meta.Quota, error) {
	return unary(c, ctx, "GetQuota", c.mc.GetQuota, &pb.InoRequest{Ino: uint64(dir)}, quotaIn)
}

// Quotas implements meta.QuotaAPI.
func (c *Client) Quotas(ctx context.Context) ([]meta.Quota, error) {
	return unary(c, ctx, "Quotas", c.mc.Quotas, &pb.Empty{}, quotaListIn)
}

// RemoveQuota implements meta.QuotaAPI.
func (c *Client) RemoveQuota(ctx context.Context, dir meta.Ino) error {
	_, err := unary(c, ctx, "RemoveQuota", c.mc.RemoveQuota, &pb.InoRequest{Ino: uint64(dir)}, emptyIn)
	return err
}

// QuotaOf implements meta.QuotaAPI.
func (c *Client) QuotaOf(ctx context.Context, ino meta.Ino) (meta.Quota, error) {
	return unary(c, ctx, "QuotaOf", c.mc.QuotaOf, &pb.InoRequest{Ino: uint64(ino)}, quotaIn)
}

// errNoQuotas answers quota calls to a service that has none.
var errNoQuotas = fmt.Errorf("meta service has no quotas: %w", syscall.ENOTSUP)

// quotas is the served API's quota half.
func (s *server) quotas() (meta.QuotaAPI, error) {
	qa, ok := s.api.(meta.QuotaAPI)
	if !ok {
		return nil, statusOf(errNoQuotas)
	}
	return qa, nil
}

func quotaReply(q meta.Quota, err error) (*pb.Quota, error) {
	if err != nil {
		return nil, statusOf(err)
	}
	return quotaOut(q), nil
}

// SetQuota serves meta.QuotaAPI.SetQuota.
func (s *server) SetQuota(ctx context.Context, r *pb.Quota) (*pb.Quota, error) {
	qa, err := s.quotas()
	if err != nil {
		return nil, err
	}
	q, _ := quotaIn(r)
	q.Bytes, q.Inodes = 0, 0 // usage is the service's to count
	return quotaReply(qa.SetQuota(ctx, q))
}

// GetQuota serves meta.QuotaAPI.Quota.
func (s *server) GetQuota(ctx context.Context, r *pb.InoRequest) (*pb.Quota, error) {
	qa, err := s.quotas()
	if err != nil {
		return nil, err
	}
	return quotaReply(qa.Quota(ctx, meta.Ino(r.Ino)))
}

// Quotas serves meta.QuotaAPI.Quotas.
func (s *server) Quotas(ctx context.Context, _ *pb.Empty) (*pb.QuotaList, error) {
	qa, err := s.quotas()
	if err != nil {
		return nil, err
	}
	l, err := qa.Quotas(ctx)
	if err != nil {
		return nil, statusOf(err)
	}
	out := &pb.QuotaList{}
	for _, q := range l {
		out.Quotas = append(out.Quotas, quotaOut(q))
	}
	return out, nil
}

// QuotaOf serves meta.QuotaAPI.QuotaOf.
func (s *server) QuotaOf(ctx context.Context, r *pb.InoRequest) (*pb.Quota, error) {
	qa, err := s.quotas()
	if err != nil {
		return nil, err
	}
	return quotaReply(qa.QuotaOf(ctx, meta.Ino(r.Ino)))
}

// RemoveQuota serves meta.QuotaAPI.RemoveQuota.
func (s *server) RemoveQuota(ctx context.Context, r *pb.InoRequest) (*pb.Empty, error) {
	qa, err := s.quotas()
	if err != nil {
		return nil, err
	}
	return emptyReply(qa.RemoveQuota(ctx, meta.Ino(r.Ino)))
}
