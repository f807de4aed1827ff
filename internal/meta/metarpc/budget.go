package metarpc

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/tap"
	"google.golang.org/protobuf/proto"

	pb "tessera/internal/meta/metarpc/metapb"
)

// budgets bound what one peer (one remote IP address, over all its
// connections) can make the server hold: the calls it has open and the
// request bytes of its calls.
//
// Why this shape (grpc-go, the version in go.mod): a call's request is
// read on the call's own goroutine, which asks the transport for the whole
// message once its 5-byte length prefix is in (checked against MaxRecvMsg
// first) and only then opens the stream's flow-control window to that
// length; until then the transport buffers at most the initial stream
// window (streamWindow) of the call's data. For a unary method the whole
// message is read before any interceptor runs; the last hook before the
// read is the stats handler's InHeader, on the same goroutine. So:
//
//   - the tap handle (on the connection's reader, before the call gets a
//     goroutine) refuses a call past MaxStreamsPerPeer with
//     ResourceExhausted: a peer's unread data is then at most
//     MaxStreamsPerPeer x streamWindow;
//   - before every message is read (InHeader for a unary call, RecvMsg for
//     a stream's), the call takes from its peer's byte budget
//     (MaxInFlightPerPeer) the largest the message may be, waiting while it
//     does not fit: MaxRecvMsg for a unary call, since nothing tells the
//     size before the read; for a streaming method its own maximum
//     (streamMsgMax), which piecesConn enforces on the length prefix. After
//     the read the charge drops to the message's size, kept until the call
//     ends (a unary call) or its next read (a stream), since the handler
//     holds the decoded request. A wait ends with the call's context.
//
// A long-lived stream (the callback stream of a session) is charged an
// Ack's maximum (1 KiB) while it waits for the next Ack and the Ack's size
// while its poll waits, so sessions do not starve their peer's other
// calls. Everything a call holds is given back when its stream ends (its
// context is done).
type budgets struct {
	maxStreams int
	maxBytes   int64
	maxMsg     int64
	log        *slog.Logger
	unary      map[string]bool  // full names of the unary methods, gated at InHeader
	maxima     map[string]int64 // the largest request by method (methodMaxima); others: maxMsg

	mu    sync.Mutex
	peers map[string]*peerBudget
	conns map[string]*connOwed // by remote address (IP:port): replies queued (replies.go)
}

// peerBudget is one peer's share; guarded by budgets.mu.
type peerBudget struct {
	addr    string
	streams int
	bytes   int64
	waiting int
	freed   chan struct{} // closed and replaced whenever bytes are given back
}

// budgetUse is what one peer holds (tests).
type budgetUse struct {
	Streams int   // calls open
	Bytes   int64 // request bytes charged
	Waiting int   // calls waiting for bytes to read their request
}

func newBudgets(o ServeOptions) *budgets {
	b := &budgets{maxStreams: o.MaxStreamsPerPeer, maxBytes: o.MaxInFlightPerPeer,
		maxMsg: int64(o.MaxRecvMsg), log: o.Logger, unary: map[string]bool{}, maxima: map[string]int64{}, peers: map[string]*peerBudget{}}
	return b
}

// learn takes the methods of the services gs serves (every port's, not
// only meta's: a gateway's unary calls are charged as meta's are) and
// their largest requests; streamMsgMax overrides the computed maxima.
// Called before Serve.
func (b *budgets) learn(gs *grpc.Server, maxima map[string]int64) {
	for svc, info := range gs.GetServiceInfo() {
		for _, m := range info.Methods {
			if !m.IsClientStream && !m.IsServerStream {
				b.unary["/"+svc+"/"+m.Name] = true
			}
		}
	}
	for k, v := range maxima {
		b.maxima[k] = v
	}
	for k, v := range streamMsgMax {
		b.maxima[k] = v
		maxima[k] = v
	}
}

// charge is what a read of method is charged before it: the method's
// largest request.
func (b *budgets) charge(method string) int64 {
	if n, ok := b.maxima[method]; ok {
		return n
	}
	return b.maxMsg
}

// use reports what peer (an IP address) holds.
func (b *budgets) use(peer string) budgetUse {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.peers[peer]
	if p == nil {
		return budgetUse{}
	}
	return budgetUse{Streams: p.streams, Bytes: p.bytes, Waiting: p.waiting}
}

// streamMsgMax are the largest messages of the streaming methods, which
// piecesConn enforces on their length prefix: a read of one is charged
// this, not MaxRecvMsg. A callback Ack is two integers.
var streamMsgMax = map[string]int64{pb.SessionsService_Callbacks_FullMethodName: maxAck}

const maxAck = 1 << 10

type callKey struct{}

// call is one admitted stream's charge.
type call struct {
	b      *budgets
	p      *peerBudget
	unary  bool       // its request is read before any interceptor: gated at InHeader
	charge int64      // the largest request its method takes
	mu     sync.Mutex // guards held, ended
	held   int64
	ended  bool
}

// tap admits a new call of its peer, or refuses it past the peer's cap.
// It runs on the connection's reader under the transport's lock: it must
// not block.
func (b *budgets) tap(ctx context.Context, info *tap.Info) (context.Context, error) {
	addr := "unknown"
	if pr, ok := peer.FromContext(ctx); ok && pr.Addr != nil {
		addr = hostOf(pr.Addr)
	}
	b.mu.Lock()
	p := b.peers[addr]
	if p == nil {
		p = &peerBudget{addr: addr, freed: make(chan struct{})}
		b.peers[addr] = p
	}
	if p.streams >= b.maxStreams {
		b.mu.Unlock()
		b.log.Warn("meta rpc refused a call", "peer", addr, "method", info.FullMethodName, "why", "too many calls open")
		return nil, status.Errorf(codes.ResourceExhausted, "meta rpc: %s has %d calls open, the most one peer may (MaxStreamsPerPeer %d)", addr, p.streams, b.maxStreams)
	}
	p.streams++
	b.mu.Unlock()
	c := &call{b: b, p: p, unary: b.unary[info.FullMethodName], charge: b.charge(info.FullMethodName)}
	context.AfterFunc(ctx, c.end) // the stream's context ends with the stream, however it ends
	return context.WithValue(ctx, callKey{}, c), nil
}

func hostOf(a net.Addr) string {
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return host
}

// beforeRead charges the call before a message is read (the largest the
// message may be), giving back what its previous message held; it waits
// while its peer's budget cannot take it, until ctx is done.
func (c *call) beforeRead(ctx context.Context, charge int64) error {
	b, p := c.b, c.p
	b.mu.Lock()
	c.mu.Lock()
	if c.ended {
		c.mu.Unlock()
		b.mu.Unlock()
		return status.Error(codes.Canceled, "meta rpc: call ended")
	}
	b.giveLocked(p, c.held)
	c.held = 0
	c.mu.Unlock()
	for p.bytes+charge > b.maxBytes {
		freed := p.freed
		p.waiting++
		b.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
			b.mu.Lock()
			p.waiting--
			b.forgetLocked(p)
			b.mu.Unlock()
			return status.FromContextError(ctx.Err()).Err()
		}
		b.mu.Lock()
		p.waiting--
	}
	c.mu.Lock()
	if !c.ended { // else end gave back everything already
		p.bytes += charge
		c.held = charge
	}
	c.mu.Unlock()
	b.mu.Unlock()
	return nil
}

// afterRead lowers the call's charge to the size of the message it read.
func (c *call) afterRead(size int64) {
	c.b.mu.Lock()
	c.mu.Lock()
	if size < c.held {
		c.b.giveLocked(c.p, c.held-size)
		c.held = size
	}
	c.mu.Unlock()
	c.b.mu.Unlock()
}

// end gives back everything the call holds, once.
func (c *call) end() {
	b, p := c.b, c.p
	b.mu.Lock()
	defer b.mu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended {
		return
	}
	c.ended = true
	b.giveLocked(p, c.held)
	c.held = 0
	p.streams--
	b.forgetLocked(p)
}

// forgetLocked drops p from the table once it holds nothing.
func (b *budgets) forgetLocked(p *peerBudget) {
	if p.streams == 0 && p.bytes == 0 && p.waiting == 0 && b.peers[p.addr] == p {
		delete(b.peers, p.addr)
	}
}

// giveLocked returns n bytes to p's budget and wakes its waiters.
func (b *budgets) giveLocked(p *peerBudget, n int64) {
	if n == 0 {
		return
	}
	p.bytes -= n
	close(p.freed)
	p.freed = make(chan struct{})
}

func callOf(ctx context.Context) *call {
	c, _ := ctx.Value(callKey{}).(*call)
	return c
}

// budgetStats is the stats handler gating the read of a unary call's
// request: InHeader is delivered on the call's goroutine just before it.
type budgetStats struct{ b *budgets }

func (h budgetStats) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }
func (h budgetStats) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context {
	return ctx
}
func (h budgetStats) HandleConn(context.Context, stats.ConnStats) {}

func (h budgetStats) HandleRPC(ctx context.Context, s stats.RPCStats) {
	c := callOf(ctx)
	if c == nil {
		return
	}
	if !c.unary {
		return
	}
	switch s := s.(type) {
	case *stats.InHeader:
		// On failure ctx is done: the read that follows fails at once and
		// no window is opened for the request.
		_ = c.beforeRead(ctx, c.charge)
	case *stats.InPayload:
		c.afterRead(int64(max(s.Length, s.WireLength)))
	}
}

// stream is the interceptor gating every read of a streaming call.
func (b *budgets) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	c := callOf(ss.Context())
	if c == nil {
		return handler(srv, ss)
	}
	return handler(srv, &budgetedStream{ServerStream: ss, c: c, charge: b.charge(info.FullMethod)})
}

type budgetedStream struct {
	grpc.ServerStream
	c      *call
	charge int64 // the largest message the stream may receive
}

// SendMsg charges the message sent to the peer until it is written.
func (s *budgetedStream) SendMsg(m any) error {
	if pm, ok := m.(proto.Message); ok {
		s.c.b.owe(s.Context(), int64(proto.Size(pm)))
	}
	return s.ServerStream.SendMsg(m)
}

func (s *budgetedStream) RecvMsg(m any) error {
	if err := s.c.beforeRead(s.Context(), s.charge); err != nil {
		return err
	}
	if err := s.ServerStream.RecvMsg(m); err != nil {
		s.c.afterRead(0)
		return err
	}
	size := int64(0)
	if pm, ok := m.(proto.Message); ok {
		size = int64(proto.Size(pm))
	}
	s.c.afterRead(size)
	return nil
}

// validate refuses limits that cannot work. A read is charged MaxRecvMsg
// while the requests held by running calls, the Acks of waiting callback
// polls among them, stay charged: a budget of a single message would let
// one waiting poll hold up every other read of its peer.
func (b *budgets) validate() error {
	if b.maxBytes < 2*b.maxMsg {
		return fmt.Errorf("metarpc: MaxInFlightPerPeer %d is less than twice MaxRecvMsg %d", b.maxBytes, b.maxMsg)
	}
	if b.maxMsg >= 0xff<<24 {
		return fmt.Errorf("metarpc: MaxRecvMsg %d: want less than %d (an oversized request is refused by raising its length's top byte)", b.maxMsg, 0xff<<24)
	}
	if b.maxStreams < 1 {
		return fmt.Errorf("metarpc: MaxStreamsPerPeer %d: want at least 1", b.maxStreams)
	}
	return nil
}
