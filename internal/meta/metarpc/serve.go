package metarpc

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"

	"tessera/internal/auth"
	"tessera/internal/meta"
	"tessera/internal/ratelog"
)

// Server bounds and their defaults (ServeOptions); see docs/protocol.md.
const (
	// DefaultMaxRecvMsg is the largest request a server reads: the length
	// prefix is checked before anything is read or allocated. The largest
	// legitimate request is a commit, about 75 bytes per changed block:
	// 16 MiB is some 220,000 blocks (14 GB of 64 KiB blocks) written
	// between two commits of one file; the client does not split commits.
	DefaultMaxRecvMsg = 16 << 20
	// DefaultMaxConns caps the connections served at once, and
	// DefaultMaxConnsPerPeer those from one IP address; more are closed
	// at accept. Every role keeps one connection to meta.
	DefaultMaxConns        = 512
	DefaultMaxConnsPerPeer = 64
	// DefaultMaxStreams caps the concurrent calls of one connection.
	DefaultMaxStreams = 256
	// DefaultMaxStreamsPerPeer caps the calls open at once from one IP
	// address, over all its connections; more are refused with
	// ResourceExhausted. A mount has some dozens of calls open at most
	// (FUSE's 64 background requests and the applications' waiting ones,
	// background commits, one callback stream per session); the cap leaves
	// room for many processes on one host (tests run every role on
	// 127.0.0.1). Its unread data is at most this many stream windows
	// (64 MiB).
	DefaultMaxStreamsPerPeer = 1024
	// DefaultMaxInFlightPerPeer bounds the request bytes one IP address's
	// calls hold: every read is charged DefaultMaxRecvMsg until the
	// message is in, then its size until the call is done; a read that
	// does not fit waits (budget.go). Four reads of unknown size at once,
	// or any number of small requests.
	DefaultMaxInFlightPerPeer = 4 * DefaultMaxRecvMsg
	// DefaultHandshakeTimeout bounds the TLS and HTTP/2 handshakes of a
	// new connection: a peer that connects and says nothing is dropped.
	DefaultHandshakeTimeout = 10 * time.Second
	// DefaultIdleTimeout closes a connection with no call for that long.
	DefaultIdleTimeout = 5 * time.Minute
	// Flow-control windows of a stream and of a connection. The stream
	// window is what the transport buffers of a call before its request is
	// read (a read then opens the window to the message's length at once,
	// so a larger one would not speed large requests up); the connection
	// window does not bound unread data (grpc-go gives it back on receipt).
	streamWindow = 64 << 10
	connWindow   = 1 << 20
	// maxHeaderList bounds a call's metadata.
	maxHeaderList = 16 << 10
	// Keepalive: the server pings a silent connection after
	// keepaliveTime and drops it when the ping is not answered within
	// keepaliveTimeout; clients may ping no more often than minPingGap.
	keepaliveTime    = 30 * time.Second
	keepaliveTimeout = 10 * time.Second
	minPingGap       = 10 * time.Second
)

// PeerLimits are the per-peer bounds a deployment may tune (`tessera meta`
// and `tessera up` flags); zero fields take the defaults.
type PeerLimits struct {
	Calls    int   // calls open at once from one IP address: ServeOptions.MaxStreamsPerPeer
	InFlight int64 // request bytes held for one IP address: ServeOptions.MaxInFlightPerPeer
}

// ServeOptions configure Serve. The zero value serves plain TCP, every
// caller being auth.Insecure, with the default bounds.
type ServeOptions struct {
	// Logger receives the listening line and every refused call or
	// connection; nil discards.
	Logger *slog.Logger
	// Creds, when set, make the port TLS-only: a caller is the identity
	// of its verified certificate, or of its bearer token (Tokens). Nil:
	// plain TCP, and every caller is auth.Insecure.
	Creds *auth.Credentials
	// Tokens verifies "authorization: Bearer TOKEN" metadata of callers
	// without a certificate; nil takes Creds.Tokens() (tokens signed by
	// the cluster CA), as the block server does.
	Tokens auth.TokenVerifier
	// Cluster is what Hello and ClusterStatus answer (cluster.go).
	Cluster ClusterInfo
	// Bounds; zero takes the default of the same name.
	MaxRecvMsg       int
	MaxConns         int
	MaxConnsPerPeer  int
	MaxStreams       uint32
	HandshakeTimeout time.Duration
	IdleTimeout      time.Duration
	// Per-peer bounds (budget.go): calls open at once, and request bytes
	// held, by one IP address over all its connections. MaxInFlightPerPeer
	// must be at least MaxRecvMsg.
	MaxStreamsPerPeer  int
	MaxInFlightPerPeer int64

	budgetWatch func(*budgets)   // tests: sees the server's budgets
	logNow      func() time.Time // tests: the clock of the refusal logs' rate limit

	protocol int // tests: speak another protocol version (0: ProtocolVersion)
}

func (o *ServeOptions) defaults() {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Tokens == nil && o.Creds != nil {
		o.Tokens = o.Creds.Tokens()
	}
	if o.MaxRecvMsg <= 0 {
		o.MaxRecvMsg = DefaultMaxRecvMsg
	}
	if o.MaxConns <= 0 {
		o.MaxConns = DefaultMaxConns
	}
	if o.MaxConnsPerPeer <= 0 {
		o.MaxConnsPerPeer = DefaultMaxConnsPerPeer
	}
	if o.MaxStreams == 0 {
		o.MaxStreams = DefaultMaxStreams
	}
	if o.MaxStreamsPerPeer <= 0 {
		o.MaxStreamsPerPeer = DefaultMaxStreamsPerPeer
	}
	if o.MaxInFlightPerPeer <= 0 {
		o.MaxInFlightPerPeer = DefaultMaxInFlightPerPeer
	}
	if o.HandshakeTimeout <= 0 {
		o.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.protocol == 0 {
		o.protocol = ProtocolVersion
	}
}

// Serve answers meta RPCs on ln with api until ln is closed; then it closes
// the connections it accepted, waits for their calls to finish and returns
// nil. It returns other Accept errors, and an error naming the bound when
// the options' bounds cannot work together.
func Serve(ln net.Listener, api meta.API, opts ServeOptions) error {
	return ServeWith(ln, opts, "meta rpc", func(gs grpc.ServiceRegistrar) {
		registerServices(gs, &server{api: api, cluster: opts.Cluster})
	})
}

// ServeWith serves on ln the gRPC services register registers, behind the
// same gate (protocol version, authentication: the caller's identity in
// each call's context), bounds and limits as Serve; what is named what
// in the listening line. Other roles' ports (the gateway's) use it so that
// every port of a cluster is guarded alike.
func ServeWith(ln net.Listener, opts ServeOptions, what string, register func(grpc.ServiceRegistrar)) error {
	opts.defaults()
	// A flood of refusals writes a line per interval, not one each.
	opts.Logger = slog.New(ratelog.NewHandler(opts.Logger.Handler(), 0, opts.logNow))
	gate := &gate{opts: opts}
	budgets := newBudgets(opts)
	if err := budgets.validate(); err != nil {
		return err
	}
	guard := &msgGuard{budgets: budgets, refused: func(peer, method string, size, most int64) {
		opts.Logger.Warn(what+" refused a call", "peer", peer, "method", method, "why",
			fmt.Sprintf("a request of %d bytes, the most this method takes is %d", size, most))
	}}
	if opts.budgetWatch != nil {
		opts.budgetWatch(budgets)
	}
	sopts := []grpc.ServerOption{
		grpc.MaxRecvMsgSize(opts.MaxRecvMsg),
		grpc.MaxConcurrentStreams(opts.MaxStreams),
		grpc.MaxHeaderListSize(maxHeaderList),
		grpc.ConnectionTimeout(opts.HandshakeTimeout),
		grpc.KeepaliveParams(keepalive.ServerParameters{
			MaxConnectionIdle: opts.IdleTimeout, Time: keepaliveTime, Timeout: keepaliveTimeout}),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: minPingGap, PermitWithoutStream: true}),
		grpc.ChainUnaryInterceptor(gate.unary, budgets.unaryReply),
		grpc.ChainStreamInterceptor(gate.stream, budgets.stream),
		grpc.UnknownServiceHandler(gate.unknown),
		grpc.InTapHandle(budgets.tap),
		grpc.StatsHandler(budgetStats{budgets}),
		grpc.WaitForHandlers(true),
		// Static flow-control windows: no BDP pings on every burst of data
		// (they cost a round trip's worth of frames per small call), and
		// the unread data a connection can park on the server is bounded.
		grpc.InitialWindowSize(streamWindow),
		grpc.InitialConnWindowSize(connWindow),
	}
	if opts.Creds != nil {
		sopts = append(sopts, grpc.Creds(&handshakes{TransportCredentials: credentials.NewTLS(opts.Creds.ServerConfig()), log: opts.Logger, guard: guard}))
	}
	gs := grpc.NewServer(sopts...)
	register(gs)
	guard.maxima = methodMaxima(gs, int64(opts.MaxRecvMsg))
	budgets.learn(gs, guard.maxima)
	lim := &limitListener{Listener: ln, max: opts.MaxConns, perPeer: opts.MaxConnsPerPeer, log: opts.Logger, plain: opts.Creds == nil, guard: guard}
	opts.Logger.Info(what+" listening", "addr", ln.Addr().String(), "tls", opts.Creds != nil, "protocol", opts.protocol)
	err := gs.Serve(lim)
	gs.Stop() // closes every connection, then waits for their handlers
	if err == nil || errors.Is(err, net.ErrClosed) || errors.Is(err, grpc.ErrServerStopped) {
		return nil
	}
	return err
}

// msgGuard is what piecesConn needs of its server: the methods' largest
// requests, and who to tell of one refused. It is complete once the
// services are registered, before the first connection.
type msgGuard struct {
	maxima  map[string]int64
	refused func(peer, method string, size, most int64)
	budgets *budgets // charged the replies queued on each connection
}

func (g *msgGuard) watch(c net.Conn, log *slog.Logger) net.Conn {
	return newPiecesConn(g.budgets.track(c), log, g.maxima, g.refused)
}
