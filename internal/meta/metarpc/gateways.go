package metarpc

import (
	"tessera/internal/meta"
	pb "tessera/internal/meta/metarpc/metapb"
)

// The gateway registry's conversions (meta.GatewaysAPI, issue 14); the
// client's methods and the server's handlers are generated
// (zz_client_gen.go, zz_server_gen.go).

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

func gatewayListOut(l []meta.GatewayNode) *pb.GatewayNodeList {
	out := &pb.GatewayNodeList{}
	for _, g := range l {
		out.Gateways = append(out.Gateways, gatewayNodeOut(g))
	}
	return out
}
