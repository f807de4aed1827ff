package metarpc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/rpc"
	"sync"
	"sync/atomic"
	"time"

	"tessera/internal/meta"
)

// Client limits and defaults; see the package comment.
const (
	PoolSize           = 4
	DialTimeout        = 2 * time.Second
	DefaultCallTimeout = 10 * time.Second
)

// Client is a meta.API served by a remote Serve. It is safe for concurrent
// use; Close releases its connections. Clients returned by WithSession share
// the connections of the one they came from.
type Client struct {
	*pool
	session meta.SessionID // sent with every call; 0: none
}

// pool is the connections a Client and its session-bound copies share.
type pool struct {
	addr   string
	next   atomic.Uint32
	closed atomic.Bool
	slots  [PoolSize]slot
	// poll is the connection of Callbacks long polls, kept apart so that a
	// poll that times out (and drops its connection) disturbs no other call.
	poll slot
}

var (
	_ meta.API           = (*Client)(nil)
	_ meta.BlockLister   = (*Client)(nil)
	_ meta.SessionBinder = (*Client)(nil)
)

// slot is one pooled connection, dialled on demand.
type slot struct {
	mu struct {
		sync.Mutex
		conn *conn // nil until dialled, and after it broke
	}
}

// conn is one rpc.Client; abandoned records that this side closed it, so
// that its calls' ErrShutdown does not read as "never sent".
type conn struct {
	rc        *rpc.Client
	abandoned atomic.Bool
}

// Dial connects to the meta service at addr. It fails at once, with one line
// naming addr, when nothing answers there.
func Dial(addr string) (*Client, error) {
	c := &Client{pool: &pool{addr: addr}}
	ctx, cancel := context.WithTimeout(context.Background(), DialTimeout)
	defer cancel()
	if _, err := c.slots[0].get(ctx, addr); err != nil {
		return nil, err
	}
	return c, nil
}

// Addr returns the address the client dials.
func (c *Client) Addr() string { return c.addr }

// Close closes the client's connections; later calls fail.
func (c *Client) Close() error {
	c.closed.Store(true)
	for i := range c.slots {
		c.slots[i].close()
	}
	c.poll.close()
	return nil
}

// close closes the slot's connection, if any.
func (s *slot) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.conn != nil {
		s.mu.conn.abandoned.Store(true)
		s.mu.conn.rc.Close()
		s.mu.conn = nil
	}
}

// WithSession implements meta.SessionBinder: the returned Client sends id
// with every call and shares c's connections (closing either closes both).
func (c *Client) WithSession(id meta.SessionID) meta.API {
	return &Client{pool: c.pool, session: id}
}

// get returns the slot's connection, dialling it if needed.
func (s *slot) get(ctx context.Context, addr string) (*conn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.conn != nil {
		return s.mu.conn, nil
	}
	ctx, cancel := context.WithTimeout(ctx, DialTimeout)
	defer cancel()
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		var oe *net.OpError
		if errors.As(err, &oe) && oe.Err != nil {
			err = oe.Err
		}
		return nil, fmt.Errorf("meta service %s: %v (%w)", addr, err, meta.ErrUnreachable)
	}
	s.mu.conn = &conn{rc: rpc.NewClient(nc)}
	return s.mu.conn, nil
}

// drop forgets cn (if it is still the slot's) and closes it.
func (s *slot) drop(cn *conn) {
	s.mu.Lock()
	if s.mu.conn == cn {
		s.mu.conn = nil
	}
	s.mu.Unlock()
	cn.abandoned.Store(true)
	cn.rc.Close()
}

// call runs method with args and returns the reply's error decoded.
func (c *Client) call(ctx context.Context, method string, args *Args) (*Reply, error) {
	if c.closed.Load() {
		return nil, fmt.Errorf("meta %s %s: client closed: %w", c.addr, method, meta.ErrIO)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultCallTimeout)
		defer cancel()
	}
	dl, _ := ctx.Deadline()
	s := &c.slots[c.next.Add(1)%PoolSize]
	if method == "Callbacks" {
		s = &c.poll
	}
	args.Session = c.session
	for attempt := 0; ; attempt++ {
		args.Timeout = int64(time.Until(dl))
		if args.Timeout <= 0 || ctx.Err() != nil {
			return nil, c.ioErr(method, context.DeadlineExceeded)
		}
		cn, err := s.get(ctx, c.addr)
		if err != nil {
			return nil, fmt.Errorf("meta %s: %w", method, err)
		}
		reply := new(Reply)
		call := cn.rc.Go(serviceName+"."+method, args, reply, make(chan *rpc.Call, 1))
		select {
		case <-call.Done:
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				s.drop(cn) // presumed stuck; the next call redials
				return nil, c.lostErr(method, ctx.Err())
			}
			return nil, c.ioErr(method, ctx.Err())
		}
		if call.Error == nil {
			err := reply.Err.decode()
			if err != nil && errors.Is(err, meta.ErrIO) && (ctx.Err() != nil || time.Until(dl) < 50*time.Millisecond) {
				// The server gave up on the deadline we sent it before our
				// own timer fired: report it as the client's time-out.
				return nil, c.lostErr(method, context.DeadlineExceeded)
			}
			return reply, err
		}
		var se rpc.ServerError
		if errors.As(call.Error, &se) {
			return nil, c.ioErr(method, call.Error)
		}
		unsent := errors.Is(call.Error, rpc.ErrShutdown) && !cn.abandoned.Load()
		s.drop(cn)
		switch {
		case c.closed.Load():
			return nil, c.ioErr(method, call.Error) // Close cut it: not an outage
		case !unsent:
			return nil, c.lostErr(method, call.Error)
		case attempt > 0:
			return nil, fmt.Errorf("meta %s %s: %w (%w)", c.addr, method, call.Error, meta.ErrUnreachable)
		}
	}
}

func (c *Client) ioErr(method string, err error) error {
	return fmt.Errorf("meta %s %s: %w (%w)", c.addr, method, err, meta.ErrIO)
}

// lostErr is the error of a call that was sent and got no reply: the
// service may have applied it (meta.ErrReplyLost).
func (c *Client) lostErr(method string, err error) error {
	return fmt.Errorf("meta %s %s: %w (%w)", c.addr, method, err, meta.ErrReplyLost)
}
