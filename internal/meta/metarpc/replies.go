package metarpc

import (
	"context"
	"net"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/peer"
	"google.golang.org/protobuf/proto"
)

// Reply bytes in the per-peer byte budget. grpc-go ends a call (its
// context, and with it the call's charge and its place under
// MaxStreamsPerPeer) when its status is queued, not when its reply is on
// the wire: a peer that never opens its receive window would leave
// replies queued on every stream of every connection until the connection
// closes. So each reply is charged to its peer's budget when it is handed
// to gRPC (owe), and given back as the connection writes bytes (paid):
// the reply data of a connection leaves in the order it was queued, and
// what else it writes (frame headers, settings, pings) is small, so the
// bytes written pay the oldest replies off nearly exactly. The peer's
// next reads wait while its budget holds unsent replies; what it can make
// the server hold is thus MaxInFlightPerPeer plus the replies of the
// calls that were running when its budget filled.

// connOwed is what one connection's queued replies hold of its peer's
// budget.
type connOwed struct {
	b     *budgets
	addr  string // the peer's IP: its budget's key
	owed  int64  // guarded by b.mu
	owing bool   // registered in b.conns; guarded by b.mu
}

// track registers c (keyed by its remote address, as gRPC's peer.Addr
// names it) so that the replies queued on it are charged; it returns
// the wrapped connection, whose writes pay them off.
func (b *budgets) track(c net.Conn) net.Conn {
	o := &connOwed{b: b, addr: hostOf(c.RemoteAddr()), owing: true}
	b.mu.Lock()
	if b.conns == nil {
		b.conns = map[string]*connOwed{}
	}
	b.conns[c.RemoteAddr().String()] = o
	b.mu.Unlock()
	return &owingConn{Conn: c, o: o}
}

// owe charges n reply bytes queued for the call of ctx to its peer.
func (b *budgets) owe(ctx context.Context, n int64) {
	pr, ok := peer.FromContext(ctx)
	if !ok || pr.Addr == nil || n <= 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	o := b.conns[pr.Addr.String()]
	if o == nil || !o.owing {
		return
	}
	o.owed += n
	b.peerLocked(o.addr).bytes += n
}

// paid gives back n bytes of what o owes (n written), or all of it.
func (o *connOwed) paid(n int64, all bool) {
	b := o.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if all {
		n = o.owed
		o.owing = false
		for k, v := range b.conns {
			if v == o {
				delete(b.conns, k)
			}
		}
	}
	n = min(n, o.owed)
	if n <= 0 {
		return
	}
	o.owed -= n
	p := b.peerLocked(o.addr)
	b.giveLocked(p, n)
	b.forgetLocked(p)
}

// peerLocked returns addr's budget, made if it has none.
func (b *budgets) peerLocked(addr string) *peerBudget {
	p := b.peers[addr]
	if p == nil {
		p = &peerBudget{addr: addr, freed: make(chan struct{})}
		b.peers[addr] = p
	}
	return p
}

// owingConn pays its connection's replies off as it writes.
type owingConn struct {
	net.Conn
	o    *connOwed
	once sync.Once
}

func (c *owingConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if n > 0 {
		c.o.paid(int64(n), false)
	}
	return n, err
}

func (c *owingConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.o.paid(0, true) })
	return err
}

// unary is the interceptor charging a unary call's reply.
func (b *budgets) unaryReply(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	resp, err := h(ctx, req)
	if m, ok := resp.(proto.Message); ok && err == nil {
		b.owe(ctx, int64(proto.Size(m)))
	}
	return resp, err
}
