package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"sync"
	"time"

	"tessera/internal/backoff"
	"tessera/internal/block"
	"tessera/internal/block/tlsconn"
	"tessera/internal/clock"
)

// putSlack is the most of a block upload that may sit in socket buffers
// once the transport has read it all (see progressBody).
const putSlack = 4 << 20

// errAttemptTimeout is the cause with which a try's watchdog cancels it.
var errAttemptTimeout = errors.New("try timed out")

// attempt is one try of a call, cancelled by its watchdog timer.
type attempt struct {
	c      *Client
	ctx    context.Context
	parent context.Context
	timer  clock.Timer
}

// expect re-arms the watchdog for a body of n bytes that starts now.
func (a *attempt) expect(n int64) { a.timer.Reset(a.c.attempt + a.c.transferTime(n)) }

// progress wraps a reply body of n bytes so that every read that moves
// bytes re-arms the watchdog for what is left (expect): a transfer that
// keeps moving is never cut, however slowly its share of a link goes
// (several uploads on a 10 MiB/s link each ran below MinRate and failed a
// write); one that stops is cut AttemptTimeout after its last bytes, plus
// the rest at MinRate. progressBody does the same for request bodies.
func (a *attempt) progress(r io.Reader, n int64) io.Reader {
	return &progressReader{r: r, a: a, left: n}
}

// progressBody is a PUT body over data that re-arms the watchdog as it is
// sent, like progress; slack is added to what is left: bytes handed to the
// socket still have to cross the link, and the server to answer. It writes
// itself out in chunks (io.WriterTo), as a bytes.Reader would in one piece:
// read through a small buffer instead, a 4 MiB block took ~128 write(2)
// calls and a copy.
//
// On TLS, net/http copies it through a 32 KiB buffer whatever it offers,
// and crypto/tls writes each 16 KiB record alone: the connection it goes
// on (setConn, from GotConn) is corked from its first read until its last
// bytes are read or it is closed (tlsconn.Cork), so the block leaves in
// tlsconn.FlushSize writes. net/http closes every request body, also when
// the request fails.
type progressBody struct {
	data  []byte
	off   int
	a     *attempt
	slack int64

	mu     sync.Mutex
	conn   net.Conn     // the connection it is sent on, when known
	uncork func() error // set while corked
	corked bool         // it was corked once: no second cork
}

func (p *progressBody) setConn(c net.Conn) {
	p.mu.Lock()
	p.conn = c
	p.mu.Unlock()
}

// cork corks the connection the first time it is called.
func (p *progressBody) cork() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.corked {
		p.corked = true
		p.uncork = tlsconn.Cork(p.conn)
	}
}

// endCork ends the cork, if any: what it gathered goes out.
func (p *progressBody) endCork() {
	p.mu.Lock()
	u := p.uncork
	p.uncork = nil
	p.mu.Unlock()
	if u != nil {
		u()
	}
}

// progressChunk is how much of a PUT body goes per write.
const progressChunk = 1 << 20

func (p *progressBody) moved(n int) {
	p.off += n
	p.a.expect(int64(len(p.data)-p.off) + p.slack)
}

func (p *progressBody) Read(b []byte) (int, error) {
	if p.off >= len(p.data) {
		p.endCork()
		return 0, io.EOF
	}
	p.cork()
	n := copy(b, p.data[p.off:])
	p.moved(n)
	if p.off >= len(p.data) {
		// The last bytes are written after this returns: uncorked, after
		// all that was gathered. net/http may not read again.
		p.endCork()
	}
	return n, nil
}

func (p *progressBody) WriteTo(w io.Writer) (int64, error) {
	p.cork()
	defer p.endCork()
	var total int64
	for p.off < len(p.data) {
		n, err := w.Write(p.data[p.off:min(len(p.data), p.off+progressChunk)])
		total += int64(n)
		p.moved(n)
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// Close ends the cork of a body that was not read to its end.
func (p *progressBody) Close() error {
	p.endCork()
	return nil
}

type progressReader struct {
	r    io.Reader
	a    *attempt
	left int64
}

func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if n > 0 {
		p.left -= int64(n)
		p.a.expect(max(p.left, 0))
	}
	return n, err
}

// transportErr wraps a failure to exchange a request, saying whether the
// watchdog cut it.
func (a *attempt) transportErr(op string, err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err // the URL only repeats the server and the block
	}
	if a.parent.Err() == nil && context.Cause(a.ctx) == errAttemptTimeout && !errors.Is(err, errAttemptTimeout) {
		return a.c.errorf(op, "%w: %v", errAttemptTimeout, err)
	}
	return a.c.errorf(op, "%w", err)
}

func (c *Client) transferTime(n int64) time.Duration {
	return time.Duration(float64(n) / float64(c.minRate) * float64(time.Second))
}

// do runs try until it succeeds, fails for good, or the tries or the budget
// run out. size is the request body size, for the timeouts.
func (c *Client) do(ctx context.Context, op string, size int64, try func(*attempt) (retry bool, err error)) error {
	start := c.clock.Now()
	budgetEnd := start.Add(c.budget + c.transferTime(size))
	// Waits of c.backoff doubling, each drawn from [1/2, 3/2) of it.
	bo := backoff.Policy{Base: c.backoff, Jitter: 0.5}.Start()
	var last error
	n := 0
	for n < c.tries {
		if n > 0 {
			wait := bo.Next()
			if c.clock.Now().Add(wait).After(budgetEnd) {
				break
			}
			if err := clock.Sleep(ctx, c.clock, wait); err != nil {
				return c.errorf(op, "%w (after %d tries: %v)", err, n, last)
			}
		}
		n++
		actx, cancel := context.WithCancelCause(ctx)
		a := &attempt{c: c, ctx: actx, parent: ctx}
		timeout := min(c.attempt+c.transferTime(size), budgetEnd.Sub(c.clock.Now()))
		a.timer = c.clock.AfterFunc(timeout, func() { cancel(errAttemptTimeout) })
		retry, err := try(a)
		a.timer.Stop()
		cancel(nil)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return c.errorf(op, "%w", ctx.Err())
		}
		if !retry {
			return err
		}
		last = err
	}
	// last names the server and the operation.
	return fmt.Errorf("%w after %d tries in %v: %v", block.ErrUnavailable, n, clock.Since(c.clock, start).Round(time.Millisecond), last)
}
