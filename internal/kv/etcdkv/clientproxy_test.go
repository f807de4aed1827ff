package etcdkv_test

import (
	"net"
	"strings"
	"sync"
	"testing"
)

// clientProxy stands between a store and one etcd member's client port
// (loopback TCP), forwarding both ways, so that a test can lose a request
// or its reply for real: the store's connection breaks with the request
// in flight, as when etcd's leader is killed.
type clientProxy struct {
	t    *testing.T
	ln   net.Listener
	dest string

	mu    sync.Mutex
	conns []net.Conn // both ends of every connection, to cut them
	// mode, when not "", is what happens to the next bytes: "swallow":
	// the next bytes from the store are dropped and every connection is
	// cut (the request never reaches etcd); "mute": etcd's replies are
	// dropped until Cut (the request is served, its reply lost).
	mode string
}

func newClientProxy(t *testing.T, clientURL string) *clientProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &clientProxy{t: t, ln: ln, dest: strings.TrimPrefix(clientURL, "http://")}
	t.Cleanup(func() { ln.Close(); p.Cut() })
	go p.accept()
	return p
}

// URL is the proxy's client URL.
func (p *clientProxy) URL() string { return "http://" + p.ln.Addr().String() }

// Swallow makes the proxy drop the next bytes the store sends and cut
// its connections.
func (p *clientProxy) Swallow() { p.set("swallow") }

// Mute makes the proxy drop what etcd sends until Cut.
func (p *clientProxy) Mute() { p.set("mute") }

func (p *clientProxy) set(mode string) {
	p.mu.Lock()
	p.mode = mode
	p.mu.Unlock()
}

// Cut closes every connection through the proxy and ends Mute; new ones
// are forwarded as usual.
func (p *clientProxy) Cut() {
	p.mu.Lock()
	conns := p.conns
	p.conns, p.mode = nil, ""
	p.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}

func (p *clientProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.dest)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, s)
		p.mu.Unlock()
		go p.pipe(s, c, "swallow")
		go p.pipe(c, s, "mute")
	}
}

// pipe copies from src to dst, dropping what arrives while the proxy's
// mode is drop.
func (p *clientProxy) pipe(dst, src net.Conn, drop string) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			mode := p.mode
			p.mu.Unlock()
			switch {
			case mode == drop && drop == "swallow":
				p.Cut()
				return
			case mode == drop:
				// muted: the reply is lost
			default:
				if _, werr := dst.Write(buf[:n]); werr != nil {
					return
				}
			}
		}
		if err != nil {
			return
		}
	}
}
