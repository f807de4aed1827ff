package memcache

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"time"
)

// Options tune a Client. Zero fields take the default in brackets.
type Options struct {
	// DialTimeout bounds opening a connection [200ms].
	DialTimeout time.Duration
	// OpTimeout is the base deadline of a call [500ms].
	OpTimeout time.Duration
	// MinRate (bytes/s) scales the deadline with the payload: a call may
	// take OpTimeout plus its bytes at MinRate [32 MiB/s].
	MinRate int64
	// MaxValue is the largest value sent or accepted [1 MiB, memcached's
	// default item size limit].
	MaxValue int
	// MaxIdle is the number of idle connections kept [4].
	MaxIdle int
	// MaxConns is the number of connections open at once [32].
	MaxConns int
}

func (o *Options) setDefaults() {
	if o.DialTimeout <= 0 {
		o.DialTimeout = 200 * time.Millisecond
	}
	if o.OpTimeout <= 0 {
		o.OpTimeout = 500 * time.Millisecond
	}
	if o.MinRate <= 0 {
		o.MinRate = 32 << 20
	}
	if o.MaxValue <= 0 {
		o.MaxValue = 1 << 20
	}
	if o.MaxIdle <= 0 {
		o.MaxIdle = 4
	}
	if o.MaxConns <= 0 {
		o.MaxConns = 32
	}
}

// Item is a memcached item.
type Item struct {
	Key   string
	Value []byte
	Flags uint32
	// Exptime is memcached's expiration: 0 never expires (the item lives
	// until evicted), up to 30 days is seconds from now, more is a unix
	// time.
	Exptime int64
}

// maxBatch is the most items a SetMulti pipelines: the server's replies
// (8 bytes each) must fit the socket buffers while we are still writing.
const maxBatch = 1024

// maxGetLine bounds one get command line; longer key lists are sent as
// several pipelined gets (memcached treats very long lines warily).
const maxGetLine = 2000

// Client talks to one memcached server. It is safe for concurrent use.
type Client struct {
	addr  string
	opts  Options
	slots chan struct{} // one token per open call (MaxConns)

	mu struct {
		sync.Mutex
		idle   []*conn
		closed bool
	}
}

type conn struct {
	nc      net.Conn
	r       *bufio.Reader
	w       *bufio.Writer
	scratch []byte
}

// New returns a client of the server at addr ("host:port"). It does not
// connect until the first call.
func New(addr string, opts Options) *Client {
	opts.setDefaults()
	return &Client{addr: addr, opts: opts, slots: make(chan struct{}, opts.MaxConns)}
}

// Addr returns the server's address.
func (c *Client) Addr() string { return c.addr }

// MaxValue returns the largest value the client sends or accepts.
func (c *Client) MaxValue() int { return c.opts.MaxValue }

// Close closes the idle connections and makes later calls fail with
// ErrClosed; calls under way finish and close their connections.
func (c *Client) Close() error {
	c.mu.Lock()
	c.mu.closed = true
	c.mu.Unlock()
	c.CloseIdle()
	return nil
}

// CloseIdle closes the idle connections (after the server was found down,
// they are likely dead).
func (c *Client) CloseIdle() {
	c.mu.Lock()
	idle := c.mu.idle
	c.mu.idle = nil
	c.mu.Unlock()
	for _, cn := range idle {
		cn.nc.Close()
	}
}

// Get returns the items found among keys, in the order of keys.
func (c *Client) Get(ctx context.Context, keys ...string) ([]Item, error) {
	var items []Item
	err := c.GetInto(ctx, keys, func(i int, flags uint32, n int) []byte {
		b := make([]byte, n)
		items = append(items, Item{Key: keys[i], Value: b, Flags: flags})
		return b
	})
	if err != nil {
		return nil, err
	}
	return items, nil
}

// GetInto fetches keys and, for each one found, calls into with its index
// in keys, its flags and its size; into returns a buffer of exactly that
// size for the value, or nil to skip it. On error the buffers may hold
// partial data.
func (c *Client) GetInto(ctx context.Context, keys []string, into func(i int, flags uint32, n int) []byte) error {
	if len(keys) == 0 {
		return nil
	}
	for _, k := range keys {
		if err := CheckKey(k); err != nil {
			return fmt.Errorf("memcache get: %w", err)
		}
	}
	return c.do(ctx, "get", 0, func(cn *conn, extend func(int)) error {
		// Batches of keys, each its own get line, all written before
		// reading the first reply.
		var batches []int // end index of each batch
		lineLen := 3
		for i, k := range keys {
			if lineLen+1+len(k) > maxGetLine {
				batches = append(batches, i)
				lineLen = 3
			}
			lineLen += 1 + len(k)
		}
		batches = append(batches, len(keys))
		start := 0
		for _, end := range batches {
			cn.w.WriteString("get")
			for _, k := range keys[start:end] {
				cn.w.WriteByte(' ')
				cn.w.WriteString(k)
			}
			cn.w.WriteString("\r\n")
			start = end
		}
		if err := cn.w.Flush(); err != nil {
			return err
		}
		start = 0
		for _, end := range batches {
			off := start
			err := readValues(cn.r, keys[start:end], c.opts.MaxValue, func(i int, flags uint32, n int) []byte {
				return into(off+i, flags, n)
			}, extend)
			if err != nil {
				return err
			}
			start = end
		}
		return nil
	})
}

// Set stores it.
func (c *Client) Set(ctx context.Context, it Item) error {
	return c.SetMulti(ctx, []Item{it})
}

// SetMulti stores items, pipelined on one connection (at most 1024). It
// returns the first error; items before it are stored, items after it may
// or may not be.
func (c *Client) SetMulti(ctx context.Context, items []Item) error {
	if len(items) > maxBatch {
		return fmt.Errorf("memcache set: %d items in one batch, at most %d", len(items), maxBatch)
	}
	size := 0
	for _, it := range items {
		if err := CheckKey(it.Key); err != nil {
			return fmt.Errorf("memcache set: %w", err)
		}
		if len(it.Value) > c.opts.MaxValue {
			return fmt.Errorf("memcache set %s: %w: %d bytes, at most %d", it.Key, ErrTooLarge, len(it.Value), c.opts.MaxValue)
		}
		size += len(it.Value)
	}
	if len(items) == 0 {
		return nil
	}
	return c.do(ctx, "set", size, func(cn *conn, _ func(int)) error {
		for _, it := range items {
			b := append(cn.scratch[:0], "set "...)
			b = append(b, it.Key...)
			b = append(b, ' ')
			b = strconv.AppendUint(b, uint64(it.Flags), 10)
			b = append(b, ' ')
			b = strconv.AppendInt(b, it.Exptime, 10)
			b = append(b, ' ')
			b = strconv.AppendInt(b, int64(len(it.Value)), 10)
			b = append(b, "\r\n"...)
			cn.scratch = b
			cn.w.Write(b)
			cn.w.Write(it.Value)
			cn.w.WriteString("\r\n")
		}
		if err := cn.w.Flush(); err != nil {
			return err
		}
		for range items {
			line, err := readLine(cn.r)
			if err != nil {
				return err
			}
			if err := parseStored(line); err != nil {
				return err
			}
		}
		return nil
	})
}

// Delete removes key; it reports whether the key was there.
func (c *Client) Delete(ctx context.Context, key string) (bool, error) {
	if err := CheckKey(key); err != nil {
		return false, fmt.Errorf("memcache delete: %w", err)
	}
	var found bool
	err := c.do(ctx, "delete", 0, func(cn *conn, _ func(int)) error {
		line, err := cn.command("delete " + key + "\r\n")
		if err != nil {
			return err
		}
		found, err = parseDeleted(line)
		return err
	})
	return found, err
}

// Version returns the server's version string; it doubles as a health probe.
func (c *Client) Version(ctx context.Context) (string, error) {
	var v string
	err := c.do(ctx, "version", 0, func(cn *conn, _ func(int)) error {
		line, err := cn.command("version\r\n")
		if err != nil {
			return err
		}
		v, err = parseVersion(line)
		return err
	})
	return v, err
}

// FlushAll invalidates every item on the server (tests use it).
func (c *Client) FlushAll(ctx context.Context) error {
	return c.do(ctx, "flush_all", 0, func(cn *conn, _ func(int)) error {
		line, err := cn.command("flush_all\r\n")
		if err != nil {
			return err
		}
		return parseOK(line)
	})
}

// command sends a one-line command and reads a one-line reply.
func (cn *conn) command(cmd string) ([]byte, error) {
	cn.w.WriteString(cmd)
	if err := cn.w.Flush(); err != nil {
		return nil, err
	}
	return readLine(cn.r)
}

// longAgo is a deadline in the past, to abort blocked I/O.
var longAgo = time.Unix(1, 0)

// do runs fn on a connection under the call's deadline (OpTimeout plus size
// at MinRate; extend pushes it out for payload discovered while reading)
// and ctx's cancellation, and classifies the error.
func (c *Client) do(ctx context.Context, op string, size int, fn func(cn *conn, extend func(n int)) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memcache %s %s: %w", op, c.addr, err)
	}
	deadline := time.Now().Add(c.opts.OpTimeout + c.rateTime(size))

	// Waiting for a slot and dialling count against the deadline.
	wctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	select {
	case c.slots <- struct{}{}:
	case <-wctx.Done():
		return c.classify(ctx, op, fmt.Errorf("waiting for a connection: %w", wctx.Err()))
	}
	defer func() { <-c.slots }()
	cn, err := c.getConn(wctx)
	if err != nil {
		if errors.Is(err, ErrClosed) {
			return fmt.Errorf("memcache %s %s: %w", op, c.addr, err)
		}
		return c.classify(ctx, "dial", err)
	}

	cn.nc.SetDeadline(deadline)
	// The conn deadline is ours; ctx's deadline and cancellation abort the
	// I/O through this hook.
	stop := context.AfterFunc(ctx, func() { cn.nc.SetDeadline(longAgo) })
	extend := func(n int) {
		deadline = deadline.Add(c.rateTime(n))
		cn.nc.SetDeadline(deadline)
	}
	err = fn(cn, extend)
	if stopped := stop(); err == nil && stopped {
		c.putConn(cn)
	} else {
		// An error leaves the stream in an unknown state, and a fired
		// hook may have poisoned the deadline.
		cn.nc.Close()
	}
	if err != nil {
		return c.classify(ctx, op, err)
	}
	return nil
}

// classify wraps err from a call: ctx's own end as such, error lines from
// the server with context, everything else as a *ConnError.
func (c *Client) classify(ctx context.Context, op string, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("memcache %s %s: %w", op, c.addr, cerr)
	}
	var re *replyError
	if errors.As(err, &re) {
		return fmt.Errorf("memcache %s %s: %w", op, c.addr, err)
	}
	if errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) {
		err = fmt.Errorf("%w: %w", ErrTimeout, err)
	}
	return &ConnError{Addr: c.addr, Op: op, Err: err}
}

func (c *Client) rateTime(n int) time.Duration {
	return time.Duration(float64(n) / float64(c.opts.MinRate) * float64(time.Second))
}

func (c *Client) getConn(ctx context.Context) (*conn, error) {
	c.mu.Lock()
	if c.mu.closed {
		c.mu.Unlock()
		return nil, ErrClosed
	}
	if n := len(c.mu.idle); n > 0 {
		cn := c.mu.idle[n-1]
		c.mu.idle = c.mu.idle[:n-1]
		c.mu.Unlock()
		return cn, nil
	}
	c.mu.Unlock()
	d := net.Dialer{Timeout: c.opts.DialTimeout}
	nc, err := d.DialContext(ctx, "tcp", c.addr)
	if err != nil {
		return nil, err
	}
	return &conn{nc: nc, r: bufio.NewReaderSize(nc, 16<<10), w: bufio.NewWriterSize(nc, 16<<10)}, nil
}

func (c *Client) putConn(cn *conn) {
	c.mu.Lock()
	if c.mu.closed || len(c.mu.idle) >= c.opts.MaxIdle {
		c.mu.Unlock()
		cn.nc.Close()
		return
	}
	c.mu.idle = append(c.mu.idle, cn)
	c.mu.Unlock()
}
