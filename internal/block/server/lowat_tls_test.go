package server

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"tessera/internal/auth"
	"tessera/internal/block/tlsconn"
	"tessera/internal/clock"
	"tessera/internal/lowat"
)

// markProbe reads a body and, after every read, the receive low-water mark
// of the socket beneath the request's TLS connection.
type markProbe struct {
	r    interface{ Read([]byte) (int, error) }
	fd   syscall.RawConn
	most *atomic.Int64
}

func (p markProbe) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	_ = p.fd.Control(func(fd uintptr) {
		if v, gerr := syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVLOWAT); gerr == nil && int64(v) > p.most.Load() {
			p.most.Store(int64(v))
		}
	})
	return n, err
}

// TestReadFullLowWaterMarkTLS: a PUT body over TLS is read with a
// low-water mark on the socket beneath crypto/tls (it stayed at 1 byte: the
// mark needs the socket, which a *tls.Conn hides), and bodies of every
// length around the mark and Held still end, the connection usable for
// the next request: the mark never waits for bytes that are not coming.
func TestReadFullLowWaterMarkTLS(t *testing.T) {
	ca, err := auth.NewCA("test", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	creds := func(name string, role auth.Role) *auth.Credentials {
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
	clk := clock.NewFake(time.Unix(0, 0)) // every body seems quick (lowatServer)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	most := new(atomic.Int64)
	sizes := make(chan int, 16)
	srv := &http.Server{ConnContext: connContext, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := tlsconn.Raw(connOf(r))
		fd, err := raw.(syscall.Conn).SyscallConn()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		data := make([]byte, r.ContentLength)
		if _, err := readFull(clk, r, markProbe{r.Body, fd, most}, data); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		for i, b := range data {
			if b != byte(i) {
				http.Error(w, fmt.Sprintf("byte %d is %d", i, b), http.StatusBadRequest)
				return
			}
		}
		sizes <- len(data)
		w.WriteHeader(http.StatusCreated)
	})}
	go srv.Serve(Listener(ln, creds("b0", auth.RoleBlockd)))
	t.Cleanup(func() { srv.Close() })

	cfg := creds("mount", auth.RoleClientRW).ClientConfig()
	cfg.ServerName = "127.0.0.1"
	c, err := tls.Dial("tcp", ln.Addr().String(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	const big = 4 << 20
	if st := trickle(t, c, br, big); !strings.HasPrefix(st, "201") {
		t.Fatalf("PUT 4 MiB over TLS: %s", st)
	}
	<-sizes
	if m := most.Load(); m <= 1 {
		t.Fatalf("4 MiB over TLS read with a low-water mark of at most %d byte(s), want a raised mark", m)
	}
	held := requestBuffer + tlsconn.Held
	for _, n := range []int{2 * lowat.Chunk, 2*lowat.Chunk + 1, 2*lowat.Chunk + held, lowat.Chunk + held + 1, 3*lowat.Chunk - held, 3*lowat.Chunk + 100, 10, 1 << 20, 5<<20 + 3} {
		if st := trickle(t, c, br, n); !strings.HasPrefix(st, "201") {
			t.Fatalf("PUT %d bytes over TLS: %s", n, st)
		}
		if got := <-sizes; got != n {
			t.Fatalf("the server read %d bytes, want %d", got, n)
		}
	}
}
