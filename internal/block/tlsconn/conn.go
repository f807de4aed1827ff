package tlsconn

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"sync"
	"syscall"
)

// MaxRecord is the most bytes one TLS 1.3 record takes on the wire: a
// 5-byte header and at most 2^14 + 256 bytes of ciphertext (RFC 8446,
// section 5.2).
const MaxRecord = 5 + 1<<14 + 256

// ReadAhead is the most a Conn reads from the socket at once: it takes
// what is queued, up to this much, in one read(2) into a buffer, so that a
// low-water mark of up to lowat.Chunk is taken in one read, not one per
// record.
const ReadAhead = 256 << 10

// Held bounds the plaintext a *tls.Conn over a Conn holds that its reader
// has not taken, the Conn's read-ahead included: the rest of the record
// crypto/tls decrypted last (at most 2^14 bytes), the ciphertext it read
// ahead, and the Conn's buffer. crypto/tls reads until it has a whole
// record (at most MaxRecord bytes), and a Conn gives it at most MaxRecord
// bytes per read, so it reads fewer than 2*MaxRecord bytes ahead;
// ciphertext is never shorter than its plaintext.
const Held = 1<<14 + 2*MaxRecord + ReadAhead

// FlushSize is the most a corked Conn gathers before writing.
const FlushSize = 256 << 10

// bufs recycles the gather and read-ahead buffers: a connection holds one
// only while corked or while bytes it read ahead wait, so thousands of idle
// connections hold none.
var bufs = sync.Pool{New: func() any { b := make([]byte, 0, max(FlushSize, ReadAhead)); return &b }}

// Conn is the TCP connection beneath a *tls.Conn; see the package comment.
type Conn struct {
	net.Conn

	mu    sync.Mutex
	corks int
	buf   *[]byte // gathered bytes while corked; nil otherwise
	err   error   // a failed gathered write: every later Write fails

	rmu   sync.Mutex
	raw   syscall.RawConn // nil if the socket has none: no read-ahead
	ahead *[]byte         // bytes read ahead, from rpos on; nil when none
	rpos  int
}

// New returns c as a Conn.
func New(c net.Conn) *Conn {
	cc := &Conn{Conn: c}
	if sc, ok := c.(syscall.Conn); ok {
		cc.raw, _ = sc.SyscallConn()
	}
	return cc
}

// Read returns at most MaxRecord bytes (see Held). It first takes what the
// socket has queued, up to ReadAhead bytes, without waiting; only when
// nothing is queued does it wait, reading into p: a buffer is held only
// while bytes read ahead are handed out, never by a connection waiting
// (thousands of idle connections hold none).
func (c *Conn) Read(p []byte) (int, error) {
	if len(p) > MaxRecord {
		p = p[:MaxRecord]
	}
	c.rmu.Lock()
	defer c.rmu.Unlock()
	if c.ahead == nil && c.raw != nil && len(p) > 0 {
		b := bufs.Get().(*[]byte)
		buf := (*b)[:cap(*b)][:ReadAhead]
		n, rerr := 0, error(nil)
		// Not waiting: the read-ahead never holds a buffer across a wait.
		cerr := c.raw.Read(func(fd uintptr) bool {
			n, rerr = syscall.Read(int(fd), buf)
			return true
		})
		if cerr == nil && rerr == nil && n > 0 {
			*b, c.ahead, c.rpos = buf[:n], b, 0
		} else {
			bufs.Put(b) // nothing queued, end of stream or an error: the read below says
		}
	}
	if c.ahead == nil {
		return c.Conn.Read(p)
	}
	n := copy(p, (*c.ahead)[c.rpos:])
	if c.rpos += n; c.rpos == len(*c.ahead) {
		*c.ahead = (*c.ahead)[:0]
		bufs.Put(c.ahead)
		c.ahead = nil
	}
	return n, nil
}

// Write writes p, or gathers it while the Conn is corked.
func (c *Conn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return 0, c.err
	}
	if c.corks == 0 {
		return c.Conn.Write(p)
	}
	if c.buf != nil && len(*c.buf)+len(p) > FlushSize {
		if err := c.flushLocked(); err != nil {
			return 0, err
		}
	}
	if len(p) >= FlushSize { // larger than a gather: no copy
		return c.writeLocked(p)
	}
	if c.buf == nil {
		c.buf = bufs.Get().(*[]byte)
	}
	*c.buf = append(*c.buf, p...)
	return len(p), nil
}

// Cork starts gathering writes; the function it returns ends this cork and,
// when it was the last one, writes what was gathered. Corks nest.
func (c *Conn) Cork() (uncork func() error) {
	c.mu.Lock()
	c.corks++
	c.mu.Unlock()
	var once sync.Once
	return func() error {
		var err error
		once.Do(func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.corks--
			if c.corks == 0 {
				err = c.flushLocked()
			}
		})
		return err
	}
}

// flushLocked writes the gathered bytes and gives back the buffer.
func (c *Conn) flushLocked() error {
	if c.buf == nil {
		return c.err
	}
	b := c.buf
	c.buf = nil
	var err error
	if len(*b) > 0 {
		_, err = c.writeLocked(*b)
	}
	*b = (*b)[:0]
	bufs.Put(b)
	return err
}

// writeLocked writes p to the socket; a failure poisons the Conn.
func (c *Conn) writeLocked(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if err != nil {
		c.err = fmt.Errorf("tlsconn: gathered write: %w", err)
		c.Conn.Close()
	}
	return n, err
}

// Cork corks the Conn beneath c if c is a *tls.Conn over a Conn; otherwise
// (plain TCP, nil) it does nothing. The function it returns ends the cork.
func Cork(c net.Conn) (uncork func() error) {
	if tc, ok := c.(*tls.Conn); ok {
		if cc, ok := tc.NetConn().(*Conn); ok {
			return cc.Cork()
		}
	}
	return func() error { return nil }
}

// Raw returns the socket to set a low-water mark on and how many bytes of
// a message the layers above it may hold already: for a *tls.Conn over a
// Conn, the TCP connection and Held; for anything else, c and 0.
func Raw(c net.Conn) (raw net.Conn, held int) {
	if tc, ok := c.(*tls.Conn); ok {
		if cc, ok := tc.NetConn().(*Conn); ok {
			return cc.Conn, Held
		}
		return nil, 0 // a TLS connection of unknown read-ahead: no mark
	}
	return c, 0
}

// Config returns cfg for block transfers: a clone with dynamic record
// sizing off (see the package comment).
func Config(cfg *tls.Config) *tls.Config {
	cfg = cfg.Clone()
	cfg.DynamicRecordSizingDisabled = true
	return cfg
}

// Server returns the server side of TLS over c: tls.Server over a Conn.
func Server(c net.Conn, cfg *tls.Config) *tls.Conn { return tls.Server(New(c), cfg) }

// Listener returns ln's connections as Server(c, Config(cfg)).
func Listener(ln net.Listener, cfg *tls.Config) net.Listener {
	return &listener{Listener: ln, cfg: Config(cfg)}
}

type listener struct {
	net.Listener
	cfg *tls.Config
}

func (l *listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return Server(c, l.cfg), nil
}

// Dialer returns a dial function for http.Transport.DialTLSContext: dial
// TCP with dial, then a TLS client over a Conn with Config(cfg), the server
// name taken from the address when cfg sets none (as http.Transport does),
// handshaken before it returns.
func Dialer(dial func(ctx context.Context, network, addr string) (net.Conn, error), cfg *tls.Config) func(ctx context.Context, network, addr string) (net.Conn, error) {
	base := Config(cfg)
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		cfg := base
		if cfg.ServerName == "" {
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, fmt.Errorf("tls dial %s: %w", addr, err)
			}
			cfg = base.Clone()
			cfg.ServerName = host
		}
		raw, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		tc := tls.Client(New(raw), cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			raw.Close()
			return nil, err
		}
		return tc, nil
	}
}
