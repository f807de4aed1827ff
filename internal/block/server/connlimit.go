package server

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"syscall"
	"time"

	"tessera/internal/ratelog"
)

// busyBody is the body of busyReply.
const busyBody = "block server busy: too many connections; retry later\n"

// busyReply is what a connection past a cap receives before it is closed.
// On a TLS port the peer sees a failed handshake instead: the refusal comes
// before any TLS, so that refusing costs no cryptography.
func busyReply() string {
	return "HTTP/1.1 503 Service Unavailable\r\n" +
		"Content-Type: text/plain; charset=utf-8\r\n" +
		ErrorHeader + ": " + ClassBusy + "\r\n" +
		"Retry-After: 1\r\n" +
		"Connection: close\r\n" +
		"Content-Length: " + strconv.Itoa(len(busyBody)) + "\r\n" +
		"\r\n" + busyBody
}

// LimitListener returns ln with the connection caps of l (defaults filled
// in): Accept answers a connection beyond MaxConns, or beyond
// MaxConnsPerIP from its peer's address, with busyReply, closes it and
// waits for the next. Refusals are logged at most once per
// ratelog.DefaultEvery, with the number held back.
func LimitListener(ln net.Listener, l Limits, log *slog.Logger) net.Listener {
	l = l.WithDefaults(0)
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &limitListener{Listener: ln, reply: busyReply(), max: l.MaxConns, perIP: l.MaxConnsPerIP, log: log, peers: make(map[string]int)}
}

type limitListener struct {
	net.Listener
	reply      string // busyReply
	max, perIP int
	log        *slog.Logger
	refused    ratelog.Limiter

	mu    sync.Mutex
	open  int
	peers map[string]int
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		peer := peerOf(c.RemoteAddr().String())
		l.mu.Lock()
		open, mine := l.open, l.peers[peer]
		ok := open < l.max && mine < l.perIP
		if ok {
			l.open++
			l.peers[peer]++
		}
		l.mu.Unlock()
		if ok {
			return &limitedConn{Conn: c, release: func() { l.closed(peer) }}, nil
		}
		l.refused.Log(l.log, slog.LevelWarn, "block server refusing connection: too many open",
			"peer", peer, "from_peer", mine, "per_ip_limit", l.perIP, "open", open, "limit", l.max)
		// A fresh socket's send buffer takes the reply without blocking;
		// the deadline only guards against the unexpected.
		_ = c.SetWriteDeadline(time.Now().Add(time.Second))
		_, _ = io.WriteString(c, l.reply)
		_ = c.Close()
	}
}

func (l *limitListener) closed(peer string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.open--
	if l.peers[peer]--; l.peers[peer] <= 0 {
		delete(l.peers, peer)
	}
}

// limitedConn gives its slot back when closed. It passes on the optional
// interfaces of the connection it wraps that the server relies on:
// io.ReaderFrom (sendfile of GET bodies) and syscall.Conn (package lowat).
type limitedConn struct {
	net.Conn
	release func()
	once    sync.Once
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

func (c *limitedConn) ReadFrom(r io.Reader) (int64, error) {
	if rf, ok := c.Conn.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(struct{ io.Writer }{c.Conn}, r)
}

func (c *limitedConn) SyscallConn() (syscall.RawConn, error) {
	if sc, ok := c.Conn.(syscall.Conn); ok {
		return sc.SyscallConn()
	}
	return nil, errors.New("block server connection: not a socket")
}

// NetConn returns the connection c wraps.
func (c *limitedConn) NetConn() net.Conn { return c.Conn }
