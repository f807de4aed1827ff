package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"time"

	"tessera/internal/auth"
	"tessera/internal/block"
	"tessera/internal/block/tlsconn"
	"tessera/internal/clock"
	"tessera/internal/lowat"
)

var (
	_ block.Store        = (*Client)(nil)
	_ block.Lister       = (*Client)(nil)
	_ block.BatchRemover = (*Client)(nil)
)

// Protocol constants shared with package server (see its doc).
const (
	errorHeader      = "Tessera-Error"
	classNotFound    = "not-found"
	classCorrupt     = "corrupt"
	listCountTrailer = "Tessera-List-Count"
	listErrorTrailer = "Tessera-List-Error"
	listRecordSize   = block.HashSize + 8 + 8
	maxHasBatch      = 1 << 16
	maxRemoveBatch   = 4096
	removeRecordSize = block.HashSize + 8
)

// hashSlack is spare capacity after a block handed to block.Sum: with less
// than 16 KiB of capacity past its tail the BLAKE3 hasher allocates copies.
const hashSlack = 16 << 10

// Options configure a Client. Zero fields take the defaults in brackets.
type Options struct {
	// Transport carries the requests [a new NewTransport() per Client].
	Transport http.RoundTripper
	// Tries is the number of tries per call [4].
	Tries int
	// Budget bounds a call's tries and backoffs: no try starts after it
	// is spent [3 s, plus the body's time at MinRate].
	Budget time.Duration
	// AttemptTimeout bounds one try [2 s, plus the body's time at MinRate].
	AttemptTimeout time.Duration
	// Backoff is the wait before the second try; it doubles for each
	// further try, with jitter [100 ms].
	Backoff time.Duration
	// MinRate is the slowest transfer rate, in bytes per second, that is
	// not a failure; it scales the timeouts to the body size [1 MiB/s: several
	// transfers may share a slow link].
	MinRate int64
	// MaxBlockSize bounds the size of a reply to Get [64 MiB].
	MaxBlockSize int64
	// Clock times the watchdogs, budgets and backoffs, and the pace of
	// reply bodies [the real clock]. Tests give a clock.Fake.
	Clock clock.Clock
	// Creds, if set, make the client speak HTTPS: the server verified
	// against their CA, their certificate presented, their Token (if any)
	// sent as a bearer token. A Transport given with them must have been
	// made by NewTLSTransport(Creds) [plain HTTP].
	Creds *auth.Credentials
}

// Client is a block.Store and block.Lister backed by one block server. It is
// safe for concurrent use.
type Client struct {
	addr    string // as given, for messages
	base    string // http://host:port
	hc      *http.Client
	tries   int
	budget  time.Duration
	attempt time.Duration
	backoff time.Duration
	minRate int64
	maxSize int64
	clock   clock.Clock
}

// replyBuffer is the most of a reply body the transport may hold when its
// reader starts: NewTransport's ReadBufferSize (the default is 4 KiB).
const replyBuffer = 64 << 10

// NewTransport returns a Transport suited to block traffic: HTTP/1.1 only
// (no HTTP/2 multiplexing of large bodies over one connection), 64 idle
// connections per host, no compression, and a bounded dial.
func NewTransport() *http.Transport {
	t := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 2 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        1024,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		WriteBufferSize:     64 << 10,
		ReadBufferSize:      replyBuffer,
		Protocols:           new(http.Protocols),
	}
	t.Protocols.SetHTTP1(true)
	return t
}

// New returns a Client of the block server at addr ("host:port" or an
// http:// URL).
func New(addr string, opts Options) *Client {
	base := strings.TrimRight(addr, "/")
	if !strings.Contains(base, "://") {
		scheme := "http://"
		if opts.Creds != nil {
			scheme = "https://"
		}
		base = scheme + base
	}
	rt := opts.Transport
	if rt == nil {
		rt = NewTLSTransport(opts.Creds)
	}
	if opts.Creds != nil && opts.Creds.Token != "" {
		rt = bearer{rt, "Bearer " + opts.Creds.Token}
	}
	c := &Client{
		addr: addr,
		base: base,
		hc: &http.Client{
			Transport: rt,
			CheckRedirect: func(*http.Request, []*http.Request) error {
				return http.ErrUseLastResponse
			},
		},
		tries:   orDefault(opts.Tries, 4),
		budget:  orDefault(opts.Budget, 3*time.Second),
		attempt: orDefault(opts.AttemptTimeout, 2*time.Second),
		backoff: orDefault(opts.Backoff, 100*time.Millisecond),
		minRate: orDefault(opts.MinRate, 1<<20),
		maxSize: orDefault(opts.MaxBlockSize, 64<<20),
		clock:   clock.Or(opts.Clock),
	}
	return c
}

func orDefault[T int | int64 | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// Addr returns the server address the client was made with.
func (c *Client) Addr() string { return c.addr }

func (c *Client) blockURL(h block.Hash) string { return c.base + "/v1/blocks/" + h.String() }

// Put sends a block; the server checks its hash and makes it durable before
// answering.
func (c *Client) Put(ctx context.Context, h block.Hash, data []byte) error {
	op := "put block " + h.String()
	return c.do(ctx, op, int64(len(data)), func(a *attempt) (bool, error) {
		n := int64(len(data))
		body := &progressBody{data: data, a: a, slack: min(n, putSlack)}
		// The body is written on the connection GotConn names; it is
		// corked while it is (progressBody.WriteTo).
		ctx := httptrace.WithClientTrace(a.ctx, &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { body.setConn(i.Conn) }})
		req, err := http.NewRequestWithContext(ctx, http.MethodPut, c.blockURL(h), body)
		if err != nil {
			return false, c.errorf(op, "%w", err)
		}
		req.ContentLength = n
		req.GetBody = func() (io.ReadCloser, error) { // a replay on a new connection
			return &progressBody{data: data, a: a, slack: body.slack}, nil
		}
		req.Header.Set("Content-Type", "application/octet-stream")
		resp, err := c.hc.Do(req)
		if err != nil {
			return true, a.transportErr(op, err)
		}
		defer drain(resp)
		switch resp.StatusCode {
		case http.StatusCreated, http.StatusNoContent:
			return false, nil
		}
		return c.statusErr(op, resp)
	})
}

// Get returns block h, verified.
func (c *Client) Get(ctx context.Context, h block.Hash) ([]byte, error) {
	return c.GetInto(ctx, h, nil)
}

// GetInto is Get reading into buf if it is large enough (the result then
// shares buf's memory); otherwise it allocates the block's size (plus 16 KiB
// that spare the hasher its own allocations).
func (c *Client) GetInto(ctx context.Context, h block.Hash, buf []byte) ([]byte, error) {
	return c.getInto(ctx, h, buf, nil)
}

// GetAlloc is Get reading into a buffer of the caller's: once the reply's
// size n is known, alloc(n) returns a buffer of capacity at least n (16 KiB
// more spare the hasher its own allocations), or nil, and GetAlloc then
// allocates one itself. alloc is called at most once per call; the
// buffer is kept for the call's retries. The result shares the buffer's
// memory, or is a fresh allocation: either way it is the caller's alone,
// and nothing writes to it after GetAlloc returns. A buffer alloc returned
// is not used after a failed call either.
func (c *Client) GetAlloc(ctx context.Context, h block.Hash, alloc func(n int) []byte) ([]byte, error) {
	return c.getInto(ctx, h, nil, alloc)
}

func (c *Client) getInto(ctx context.Context, h block.Hash, buf []byte, alloc func(n int) []byte) ([]byte, error) {
	op := "get block " + h.String()
	var out []byte
	err := c.do(ctx, op, 0, func(a *attempt) (bool, error) {
		resp, conn, err := c.getConn(a, op, c.blockURL(h), "")
		if err != nil {
			return true, err
		}
		defer drain(resp)
		if resp.StatusCode != http.StatusOK {
			return c.statusErr(op, resp)
		}
		n := resp.ContentLength
		if n < 0 || n > c.maxSize {
			return false, c.errorf(op, "reply of %d bytes: want a Content-Length of at most %d", n, c.maxSize)
		}
		a.expect(n)
		if int64(cap(buf)) < n && alloc != nil {
			buf, alloc = alloc(int(n)), nil
		}
		if int64(cap(buf)) < n {
			// The slack spares the hasher a copy of the block's tail.
			buf = make([]byte, n, n+hashSlack)
		}
		data := buf[:n]
		raw, held := tlsconn.Raw(conn) // on TLS: the socket beneath
		if _, err := lowat.ReadFullClock(c.clock, raw, a.progress(resp.Body, n), data, replyBuffer+held); err != nil {
			return true, a.transportErr(op+": read body", err)
		}
		if got := block.Sum(data); got != h {
			return false, c.errorf(op, "%w: received %d bytes hashing to %s", block.ErrCorrupt, n, got)
		}
		out = data
		return false, nil
	})
	return out, err
}

// GetRange returns n bytes of block h from offset off (fewer if the block
// ends first). A range cannot be verified; callers that need integrity fetch
// whole blocks.
func (c *Client) GetRange(ctx context.Context, h block.Hash, off, n int64) ([]byte, error) {
	op := fmt.Sprintf("get block %s range %d+%d", h, off, n)
	if off < 0 || n < 0 {
		return nil, c.errorf(op, "negative offset or length")
	}
	if n == 0 {
		return []byte{}, nil
	}
	rng := fmt.Sprintf("bytes=%d-%d", off, off+n-1)
	var out []byte
	err := c.do(ctx, op, n, func(a *attempt) (bool, error) {
		resp, err := c.get(a, op, c.blockURL(h), rng)
		if err != nil {
			return true, err
		}
		defer drain(resp)
		limit := n
		switch resp.StatusCode {
		case http.StatusPartialContent:
		case http.StatusOK: // the whole block: cut the range out of it
			limit = c.maxSize
		case http.StatusRequestedRangeNotSatisfiable:
			// Content-Range: bytes */<size>. A range starting at the
			// end is empty, as for disk.Store.
			var size int64
			if _, err := fmt.Sscanf(resp.Header.Get("Content-Range"), "bytes */%d", &size); err == nil && size == off {
				out = []byte{}
				return false, nil
			}
			return false, c.errorf(op, "range beyond the end of the block (%s)", resp.Header.Get("Content-Range"))
		default:
			return c.statusErr(op, resp)
		}
		if resp.ContentLength < 0 || resp.ContentLength > limit {
			return false, c.errorf(op, "reply of %d bytes: want a Content-Length of at most %d", resp.ContentLength, limit)
		}
		a.expect(resp.ContentLength)
		data := make([]byte, resp.ContentLength)
		if _, err := io.ReadFull(resp.Body, data); err != nil {
			return true, a.transportErr(op+": read body", err)
		}
		if resp.StatusCode == http.StatusOK {
			data = data[min(off, int64(len(data))):]
			data = data[:min(n, int64(len(data)))]
		}
		out = data
		return false, nil
	})
	return out, err
}

// get sends a GET (with a Range header if rng is set).
func (c *Client) get(a *attempt, op, url, rng string) (*http.Response, error) {
	resp, _, err := c.getConn(a, op, url, rng)
	return resp, err
}

// getConn is get that also returns the connection the reply arrives on
// (nil if the transport did not say).
func (c *Client) getConn(a *attempt, op, url, rng string) (*http.Response, net.Conn, error) {
	var conn net.Conn
	ctx := httptrace.WithClientTrace(a.ctx, &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { conn = i.Conn }})
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, nil, c.errorf(op, "%w", err)
	}
	if rng != "" {
		req.Header.Set("Range", rng)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, nil, a.transportErr(op, err)
	}
	return resp, conn, nil
}

// Usage returns the server's block count and bytes.
func (c *Client) Usage(ctx context.Context) (blocks, bytes int64, err error) {
	var reply struct {
		Blocks int64 `json:"blocks"`
		Bytes  int64 `json:"bytes"`
	}
	err = c.doJSON(ctx, "usage", http.MethodGet, c.base+"/v1/usage", &reply)
	return reply.Blocks, reply.Bytes, err
}

// Space returns the free and total bytes of the file system the server
// stores on (block.Spacer); block.ErrNoSpaceInfo when it does not say.
func (c *Client) Space(ctx context.Context) (free, size int64, err error) {
	var reply struct {
		Free *int64 `json:"free"`
		Size *int64 `json:"size"`
	}
	if err := c.doJSON(ctx, "usage", http.MethodGet, c.base+"/v1/usage", &reply); err != nil {
		return 0, 0, err
	}
	if reply.Free == nil || reply.Size == nil {
		return 0, 0, block.ErrNoSpaceInfo
	}
	return *reply.Free, *reply.Size, nil
}

var _ block.Spacer = (*Client)(nil)

func (c *Client) doJSON(ctx context.Context, op, method, url string, v any) error {
	return c.doJSONSized(ctx, op, method, url, 0, v)
}

// doJSONSized is doJSON for a request whose work on the server is reading
// size bytes: its timeouts grow with size as a transfer's do.
func (c *Client) doJSONSized(ctx context.Context, op, method, url string, size int64, v any) error {
	return c.do(ctx, op, size, func(a *attempt) (bool, error) {
		req, err := http.NewRequestWithContext(a.ctx, method, url, nil)
		if err != nil {
			return false, c.errorf(op, "%w", err)
		}
		resp, err := c.hc.Do(req)
		if err != nil {
			return true, a.transportErr(op, err)
		}
		defer drain(resp)
		if resp.StatusCode != http.StatusOK {
			return c.statusErr(op, resp)
		}
		if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(v); err != nil {
			if a.ctx.Err() != nil {
				return true, a.transportErr(op+": read body", err)
			}
			return false, c.errorf(op, "decode reply: %w", err)
		}
		return false, nil
	})
}

// statusErr turns an unexpected reply into an error of its class and says
// whether it is worth another try.
func (c *Client) statusErr(op string, resp *http.Response) (retry bool, err error) {
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	text := strings.TrimSpace(string(msg))
	if text == "" {
		text = resp.Status
	}
	class := resp.Header.Get(errorHeader)
	switch {
	case class == classCorrupt:
		return false, c.errorf(op, "%w: server reports: %s", block.ErrCorrupt, text)
	case resp.StatusCode == http.StatusNotFound && class == classNotFound:
		return false, c.errorf(op, "%w", block.ErrNotFound)
	case resp.StatusCode == http.StatusUnprocessableEntity:
		return false, c.errorf(op, "%w: %s", block.ErrHashMismatch, text)
	case resp.StatusCode == http.StatusInsufficientStorage:
		return false, c.errorf(op, "%w: %s", block.ErrNoSpace, text)
	case resp.StatusCode == http.StatusUnauthorized:
		return false, c.errorf(op, "%w: %s", auth.ErrUnauthenticated, text)
	case resp.StatusCode == http.StatusForbidden:
		return false, c.errorf(op, "%w: %s", auth.ErrDenied, text)
	case resp.StatusCode >= 500:
		return true, c.errorf(op, "status %d: %s", resp.StatusCode, text)
	default:
		return false, c.errorf(op, "status %d: %s", resp.StatusCode, text)
	}
}

func (c *Client) errorf(op, format string, args ...any) error {
	return fmt.Errorf("block server %s: %s: "+format, append([]any{c.addr, op}, args...)...)
}

// drain reads what is left of a small reply so the connection can be reused,
// and closes it.
func drain(resp *http.Response) {
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
}
