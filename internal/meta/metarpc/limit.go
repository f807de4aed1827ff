package metarpc

import (
	"log/slog"
	"net"
	"sync"
)

// limitListener caps the connections served at once. A connection past the
// cap is closed at accept, not left in the kernel's backlog, so that a flood
// of idle connections costs the server nothing and its peers learn at once;
// the handshake timeout (ServeOptions.HandshakeTimeout) frees the slots of
// connections that never speak.
type limitListener struct {
	net.Listener
	max int
	log *slog.Logger

	mu struct {
		sync.Mutex
		open int
	}
}

// Accept returns the next connection within the cap.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		l.mu.Lock()
		full := l.mu.open >= l.max
		if !full {
			l.mu.open++
		}
		l.mu.Unlock()
		if full {
			l.log.Warn("meta rpc refused a connection", "peer", c.RemoteAddr().String(), "why", "too many connections", "max", l.max)
			c.Close()
			continue
		}
		return &countedConn{Conn: c, l: l}, nil
	}
}

// countedConn gives its slot back once, on its first Close.
type countedConn struct {
	net.Conn
	l    *limitListener
	once sync.Once
}

func (c *countedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.mu.Lock()
		c.l.mu.open--
		c.l.mu.Unlock()
	})
	return err
}
