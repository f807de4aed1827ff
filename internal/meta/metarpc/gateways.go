package metarpc

import (
	"context"
	"fmt"
	"syscall"

	"tessera/internal/meta"
	pb "tessera/internal/meta/metarpc/metapb"
)

// The gateway registry (meta.GatewaysAPI, issue 14): conversions, the
// client's, Many's and the server's methods.

var (
	_ meta.GatewaysAPI = (*Client)(nil)
	_ meta.GatewaysAPI = (*Many)(nil)
)

func gwCountersOut(c meta.GatewayCounters) *pb.GatewayCounters {
	return &pb.GatewayCounters{BytesIngested: c.BytesIngested, Fetches: c.Fetches, Listings: c.Listings, WritebackOps: c.WritebackOps}
}

func gwCountersIn(p *pb.GatewayCounters) meta.GatewayCounters {
	return meta.GatewayCounters{BytesIngested: p.GetBytesIngested(), Fetches: p.GetFetches(), Listings: p.GetListings(), WritebackOps: p.GetWritebackOps()}
}

func gatewayNodeOut(g meta.GatewayNode) *pb.GatewayNode {
	return &pb.GatewayNode{Id: g.ID, Addr: g.Addr, Site: g.Site, Seen: g.Seen, Started: g.Started,
		Counters: gwCountersOut(g.Counters), Prev: gwCountersOut(g.Prev), PrevSeen: g.PrevSeen, Live: g.Live}
}

func gatewayNodeIn(p *pb.GatewayNode) meta.GatewayNode {
	return meta.GatewayNode{ID: p.GetId(), Addr: p.GetAddr(), Site: p.GetSite(), Seen: p.GetSeen(), Started: p.GetStarted(),
		Counters: gwCountersIn(p.GetCounters()), Prev: gwCountersIn(p.GetPrev()), PrevSeen: p.GetPrevSeen(), Live: p.GetLive()}
}

func gatewayListIn(p *pb.GatewayNodeList) ([]meta.GatewayNode, error) {
	var out []meta.GatewayNode
	for _, g := range p.GetGateways() {
		out = append(out, gatewayNodeIn(g))
	}
	return out, nil
}

func gatewayListReply(l []meta.GatewayNode, err error) (*pb.GatewayNodeList, error) {
	if err != nil {
		return nil, statusOf(err)
	}
	out := &pb.GatewayNodeList{}
	for _, g := range l {
		out.Gateways = append(out.Gateways, gatewayNodeOut(g))
	}
	return out, nil
}

// RegisterGateway implements meta.GatewaysAPI.
func (c *Client) RegisterGateway(ctx context.Context, g meta.GatewayNode) ([]meta.GatewayNode, error) {
	return unary(c, ctx, "RegisterGateway", c.mc.RegisterGateway, gatewayNodeOut(g), gatewayListIn)
}

// Gateways implements meta.GatewaysAPI.
func (c *Client) Gateways(ctx context.Context) ([]meta.GatewayNode, error) {
	return unary(c, ctx, "Gateways", c.mc.Gateways, &pb.Empty{}, gatewayListIn)
}

// gateways is the served API's registry; a service without one answers
// ENOTSUP.
func (s *server) gateways() (meta.GatewaysAPI, error) {
	ga, ok := s.api.(meta.GatewaysAPI)
	if !ok {
		return nil, statusOf(fmt.Errorf("meta service has no gateway registry: %w", syscall.ENOTSUP))
	}
	return ga, nil
}

// RegisterGateway serves meta.GatewaysAPI.RegisterGateway.
func (s *server) RegisterGateway(ctx context.Context, r *pb.GatewayNode) (*pb.GatewayNodeList, error) {
	ga, err := s.gateways()
	if err != nil {
		return nil, err
	}
	return gatewayListReply(ga.RegisterGateway(ctx, gatewayNodeIn(r)))
}

// Gateways serves meta.GatewaysAPI.Gateways.
func (s *server) Gateways(ctx context.Context, _ *pb.Empty) (*pb.GatewayNodeList, error) {
	ga, err := s.gateways()
	if err != nil {
		return nil, err
	}
	return gatewayListReply(ga.Gateways(ctx))
}
