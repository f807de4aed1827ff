package client_test

import (
	"context"
	"crypto/tls"
	"log/slog"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"

	"tessera/internal/auth"
	"tessera/internal/block"
	"tessera/internal/block/client"
	"tessera/internal/block/server"
	"tessera/internal/block/tlsconn"
)

// probed is the client's TCP connection beneath TLS: it counts writes and
// notes the highest receive low-water mark its reads ran under.
type probed struct {
	*net.TCPConn
	mu      sync.Mutex
	writes  int
	maxMark int
}

func (p *probed) Write(b []byte) (int, error) {
	p.mu.Lock()
	p.writes++
	p.mu.Unlock()
	return p.TCPConn.Write(b)
}

func (p *probed) Read(b []byte) (int, error) {
	p.note()
	return p.TCPConn.Read(b)
}

// SyscallConn is the socket's, noting the mark at every read through it
// (tlsconn reads ahead through it).
func (p *probed) SyscallConn() (syscall.RawConn, error) {
	raw, err := p.TCPConn.SyscallConn()
	if err != nil {
		return nil, err
	}
	return probedRaw{raw, p}, nil
}

type probedRaw struct {
	syscall.RawConn
	p *probed
}

func (r probedRaw) Read(f func(fd uintptr) bool) error {
	r.p.note()
	return r.RawConn.Read(f)
}

// note notes the socket's receive low-water mark.
func (p *probed) note() {
	raw, err := p.TCPConn.SyscallConn()
	if err != nil {
		return
	}
	_ = raw.Control(func(fd uintptr) {
		if v, err := syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVLOWAT); err == nil {
			p.mu.Lock()
			p.maxMark = max(p.maxMark, v)
			p.mu.Unlock()
		}
	})
}

func (p *probed) stats() (writes, maxMark int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.writes, p.maxMark
}

func creds(t *testing.T, ca *auth.CA, name string, role auth.Role) *auth.Credentials {
	t.Helper()
	cp, kp, err := ca.Issue(auth.Request{Name: name, Role: role, Hosts: []string{"127.0.0.1"}, Validity: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(cp, kp)
	if err != nil {
		t.Fatal(err)
	}
	c, err := auth.NewCredentials(cert, ca.PEM)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestTLSTransfersUseFewSystemCalls: over TLS (NewTLSTransport), a 4 MiB
// Put leaves the client in tlsconn.FlushSize writes (crypto/tls alone wrote
// each 16 KiB record with its own write(2): 256), and GetInto reads the
// reply under a raised low-water mark on the socket beneath TLS (it had
// none: a *tls.Conn hides its socket from package lowat). The blocks go
// through intact, to a server that checks the client's certificate.
func TestTLSTransfersUseFewSystemCalls(t *testing.T) {
	ca, err := auth.NewCA("test", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	srvCreds := creds(t, ca, "b0", auth.RoleBlockd)
	st := openDisk(t, t.TempDir())
	hd := server.New(st, server.Options{Creds: srvCreds})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := server.NewHTTPServer(ln.Addr().String(), hd, slog.New(slog.DiscardHandler))
	go srv.Serve(server.Listener(ln, srvCreds))
	t.Cleanup(func() { srv.Close() })

	rw := creds(t, ca, "mount", auth.RoleClientRW)
	tr := client.NewTLSTransport(rw)
	t.Cleanup(tr.CloseIdleConnections)
	var mu sync.Mutex
	var conns []*probed
	dial := tr.DialContext
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		p := &probed{TCPConn: c.(*net.TCPConn)}
		mu.Lock()
		conns = append(conns, p)
		mu.Unlock()
		return p, nil
	}
	total := func() (writes, maxMark int) {
		mu.Lock()
		defer mu.Unlock()
		for _, p := range conns {
			w, m := p.stats()
			writes += w
			maxMark = max(maxMark, m)
		}
		return writes, maxMark
	}
	c := client.New(ln.Addr().String(), client.Options{Creds: rw, Transport: tr})
	ctx := context.Background()
	small := []byte("a first block: the handshake")
	if err := c.Put(ctx, block.Sum(small), small); err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 4<<20)
	for i := range data {
		data[i] = byte(i*13 + i>>14)
	}
	h := block.Sum(data)
	w0, _ := total()
	if err := c.Put(ctx, h, data); err != nil {
		t.Fatal(err)
	}
	if w, _ := total(); w-w0 > len(data)/tlsconn.FlushSize+4 {
		t.Fatalf("a 4 MiB Put took %d writes, want at most %d", w-w0, len(data)/tlsconn.FlushSize+4)
	}
	if _, mark := total(); mark > 1 {
		t.Fatalf("a low-water mark of %d before any block was read", mark)
	}
	got, err := c.GetInto(ctx, h, nil)
	if err != nil || string(got) != string(data) {
		t.Fatalf("get 4 MiB over TLS: %d bytes, equal %v, %v", len(got), string(got) == string(data), err)
	}
	if _, mark := total(); mark <= 1 {
		t.Fatalf("the 4 MiB reply was read with a low-water mark of at most %d, want a raised one", mark)
	}
}
