package etcdkv

import (
	"context"
	"sync/atomic"

	"google.golang.org/grpc"
)

// Requests counts the unary requests a Store sent to etcd, by kind: each
// is one round trip to a member. What one operation of the meta service
// costs etcd is the difference of two readings (tests, benchmarks).
// Streams (watches, lease keep-alives) are not counted.
type Requests struct {
	Range int64 // KV.Range: a Get or a Scan page
	Txn   int64 // KV.Txn: read-only (GetMany, Prefetch, a read's check) or a commit
	Other int64 // every other unary request (Put, Compact, leases, maintenance, ...)
}

// Sub returns r minus o: the requests sent between two readings.
func (r Requests) Sub(o Requests) Requests {
	return Requests{Range: r.Range - o.Range, Txn: r.Txn - o.Txn, Other: r.Other - o.Other}
}

// Total is every request counted.
func (r Requests) Total() int64 { return r.Range + r.Txn + r.Other }

// requestCounts are a Store's counters, bumped by its client's interceptor.
type requestCounts struct{ rng, txn, other atomic.Int64 }

// Requests returns the requests sent so far.
func (s *Store) Requests() Requests {
	c := s.reqs
	return Requests{Range: c.rng.Load(), Txn: c.txn.Load(), Other: c.other.Load()}
}

// interceptor counts each unary request by its method before sending it.
func (c *requestCounts) interceptor(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	switch method {
	case "/etcdserverpb.KV/Range":
		c.rng.Add(1)
	case "/etcdserverpb.KV/Txn":
		c.txn.Add(1)
	default:
		c.other.Add(1)
	}
	return invoker(ctx, method, req, reply, cc, opts...)
}
