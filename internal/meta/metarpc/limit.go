package metarpc

import (
	"fmt"
	"log/slog"
	"net"
	"sync"
)

// limitListener caps the connections served at once, in all and per peer
// address (so that one host cannot take every slot). A connection past a
// cap is closed at accept, not left in the kernel's backlog, so that a
// flood of idle connections costs the server nothing and its peers learn at
// once; the handshake timeout (ServeOptions.HandshakeTimeout) frees the
// slots of connections that never speak.
type limitListener struct {
	net.Listener
	max, perPeer int
	log          *slog.Logger
	plain        bool // no TLS: the connection's bytes are HTTP/2, watched by piecesConn
	guard        *msgGuard

	mu struct {
		sync.Mutex
		open   int
		byPeer map[string]int // open connections by peer IP
	}
}

// peerOf is the address a connection counts against: its IP.
func peerOf(c net.Conn) string {
	host, _, err := net.SplitHostPort(c.RemoteAddr().String())
	if err != nil {
		return c.RemoteAddr().String()
	}
	return host
}

// Accept returns the next connection within the cap.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		peer := peerOf(c)
		why := ""
		l.mu.Lock()
		switch {
		case l.mu.open >= l.max:
			why = fmt.Sprintf("too many connections (%d)", l.max)
		case l.mu.byPeer[peer] >= l.perPeer:
			why = fmt.Sprintf("too many connections from %s (%d)", peer, l.perPeer)
		default:
			if l.mu.byPeer == nil {
				l.mu.byPeer = map[string]int{}
			}
			l.mu.open++
			l.mu.byPeer[peer]++
		}
		l.mu.Unlock()
		if why != "" {
			l.log.Warn("meta rpc refused a connection", "peer", c.RemoteAddr().String(), "why", why)
			c.Close()
			continue
		}
		var cc net.Conn = &countedConn{Conn: c, l: l, peer: peer}
		if l.plain {
			cc = l.guard.watch(cc, l.log)
		}
		return cc, nil
	}
}

// countedConn gives its slot back once, on its first Close.
type countedConn struct {
	net.Conn
	l    *limitListener
	peer string
	once sync.Once
}

func (c *countedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.mu.Lock()
		c.l.mu.open--
		if c.l.mu.byPeer[c.peer]--; c.l.mu.byPeer[c.peer] <= 0 {
			delete(c.l.mu.byPeer, c.peer)
		}
		c.l.mu.Unlock()
	})
	return err
}
