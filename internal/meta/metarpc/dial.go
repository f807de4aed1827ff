package metarpc

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/stats"

	"tessera/internal/auth"
	"tessera/internal/meta"
)

// Client limits and defaults; see the package comment.
const (
	DialTimeout        = 2 * time.Second
	DefaultCallTimeout = 10 * time.Second
	// MaxReplyMsg is the largest reply a client reads (a GetRecipe run of
	// MaxRecipeRun hashes is 2.3 MiB, a ReadDir plus page with inline
	// files can be larger).
	MaxReplyMsg = 64 << 20
)

// DialOptions configure Dial. The zero value dials plain TCP.
type DialOptions struct {
	// Creds, when set, dial TLS: the server verified against Creds' CA
	// and its name against the address, Creds' certificate presented
	// (none when Creds.Cert is empty: a caller with a token).
	Creds *auth.Credentials
	// Token is sent as "authorization: Bearer TOKEN" with every call;
	// only over TLS.
	Token string
	// PeerRoles, when set, refuses a server whose certificate is not of
	// one of these roles (a gateway's peers and mounts dial only
	// gateways: an address in the registry is not trusted alone).
	PeerRoles []auth.Role

	protocol int // tests: speak another protocol version (0: ProtocolVersion)
}

// Client is a meta.API served by a remote Serve. It is safe for concurrent
// use; Close releases its connection. Clients returned by WithSession share
// the connection of the one they came from.
type Client struct {
	*conn
	session meta.SessionID // sent with every call; 0: none
}

var (
	_ meta.API           = (*Client)(nil)
	_ meta.BlockLister   = (*Client)(nil)
	_ meta.SessionBinder = (*Client)(nil)
)

// conn is what a Client and its session-bound copies share.
type conn struct {
	addr     string
	cc       *grpc.ClientConn
	mc       stubs
	token    string
	protocol int
	closed   atomic.Bool
	dials    dialWatch
	streams  streams // callback streams, one per session (callbacks.go)
}

// Dial connects to the meta service at addr. It fails at once, with one line
// naming addr, when nothing answers there (or, with TLS, when the handshake
// fails).
func Dial(addr string, opts DialOptions) (*Client, error) {
	if opts.Token != "" && opts.Creds == nil {
		return nil, fmt.Errorf("meta service %s: a token is only sent over TLS (no credentials given)", addr)
	}
	if opts.protocol == 0 {
		opts.protocol = ProtocolVersion
	}
	c := &conn{addr: addr, token: opts.Token, protocol: opts.protocol}
	c.dials.ch = make(chan struct{})
	tc := insecure.NewCredentials()
	if opts.Creds != nil {
		cfg := opts.Creds.ClientConfig()
		if len(opts.Creds.Cert.Certificate) == 0 {
			cfg.Certificates = nil
		}
		if roles := opts.PeerRoles; len(roles) > 0 {
			cfg.VerifyConnection = func(cs tls.ConnectionState) error {
				id, err := auth.PeerIdentity(&cs)
				if err != nil {
					return err
				}
				if !slices.Contains(roles, id.Role) {
					return fmt.Errorf("%s at %s is not of role %v", id, addr, roles)
				}
				return nil
			}
		}
		tc = credentials.NewTLS(cfg)
	}
	tc = &handshakes{TransportCredentials: tc, dials: &c.dials}
	cc, err := grpc.NewClient("passthrough:///"+addr,
		grpc.WithTransportCredentials(tc),
		grpc.WithContextDialer(c.dial),
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 50 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second},
			MinConnectTimeout: DialTimeout,
		}),
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: keepaliveTime, Timeout: keepaliveTimeout, PermitWithoutStream: true}),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(MaxReplyMsg)),
		grpc.WithStatsHandler(sentTracker{}),
		grpc.WithInitialWindowSize(streamWindow),
		grpc.WithInitialConnWindowSize(connWindow),
	)
	if err != nil {
		return nil, fmt.Errorf("meta service %s: %w", addr, err)
	}
	c.cc, c.mc = cc, newStubs(cc)
	ctx, cancel := context.WithTimeout(context.Background(), DialTimeout)
	defer cancel()
	if err := c.waitReady(ctx); err != nil {
		cc.Close()
		return nil, err
	}
	return &Client{conn: c}, nil
}

// dial is the connection's dialer: plain TCP. Each attempt's outcome is
// recorded (here when it fails, else after the handshake) so that a call
// can wait for a fresh attempt (reconnect).
func (c *conn) dial(ctx context.Context, addr string) (net.Conn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		var oe *net.OpError
		if errors.As(err, &oe) && oe.Err != nil {
			err = oe.Err
		}
	}
	if err != nil {
		c.dials.done(err) // else the handshake reports (handshakes)
	}
	return nc, err
}

// waitReady connects and waits until the connection is ready, or fails
// with meta.ErrUnreachable naming why.
func (c *conn) waitReady(ctx context.Context) error {
	g := c.dials.gen()
	c.cc.Connect()
	for {
		st := c.cc.GetState()
		switch st {
		case connectivity.Ready:
			return nil
		case connectivity.Shutdown:
			return fmt.Errorf("meta service %s: client closed: %w", c.addr, meta.ErrIO)
		case connectivity.TransientFailure:
			// Sticky: the state stays TransientFailure while the next
			// attempt runs, so the dialer tells how it went.
			c.dials.mu.Lock()
			n, err, ch := c.dials.n, c.dials.err, c.dials.ch
			c.dials.mu.Unlock()
			if n > g && err != nil {
				return fmt.Errorf("meta service %s: %v (%w)", c.addr, err, meta.ErrUnreachable)
			}
			if n == g {
				select {
				case <-ch:
					continue
				case <-ctx.Done():
					return fmt.Errorf("meta service %s: no connection within %v (%w)", c.addr, DialTimeout, meta.ErrUnreachable)
				}
			}
		}
		if !c.cc.WaitForStateChange(ctx, st) {
			if err, n := c.dials.last(); n > g && err != nil {
				return fmt.Errorf("meta service %s: %v (%w)", c.addr, err, meta.ErrUnreachable)
			}
			return fmt.Errorf("meta service %s: no connection within %v (state %v) (%w)", c.addr, DialTimeout, st, meta.ErrUnreachable)
		}
	}
}

// reconnect makes the connection try again at once, after a call found it
// broken, and waits for that attempt: nil once ready again.
func (c *conn) reconnect(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, DialTimeout)
	defer cancel()
	c.cc.ResetConnectBackoff()
	return c.waitReady(ctx)
}

// Addr returns the address the client dials.
func (c *Client) Addr() string { return c.addr }

// Close closes the client's connection; later calls fail.
func (c *Client) Close() error {
	c.closed.Store(true)
	c.streams.closeAll()
	return c.cc.Close()
}

// WithSession implements meta.SessionBinder: the returned Client sends id
// with every call and shares c's connection (closing either closes both).
func (c *Client) WithSession(id meta.SessionID) meta.API {
	return &Client{conn: c.conn, session: id}
}

// dialWatch records the dialer's results: how many dials finished and how
// the latest ended.
type dialWatch struct {
	mu  sync.Mutex
	n   uint64
	err error
	ch  chan struct{} // closed and replaced at every finished dial
}

func (w *dialWatch) done(err error) {
	w.mu.Lock()
	w.n++
	w.err = err
	close(w.ch)
	w.ch = make(chan struct{})
	w.mu.Unlock()
}

func (w *dialWatch) gen() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n
}

func (w *dialWatch) last() (error, uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err, w.n
}

// sentTracker marks a call's sent flag (in its context) once its header is
// queued on a live connection: a call that fails before that was never
// sent, so it is unreachable, not lost.
type sentTracker struct{}

type sentKey struct{}

func (sentTracker) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }
func (sentTracker) HandleRPC(ctx context.Context, s stats.RPCStats) {
	if _, ok := s.(*stats.OutHeader); ok {
		if f, ok := ctx.Value(sentKey{}).(*atomic.Bool); ok {
			f.Store(true)
		}
	}
}
func (sentTracker) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context { return ctx }
func (sentTracker) HandleConn(context.Context, stats.ConnStats)                       {}
