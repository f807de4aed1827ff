package tlsconn_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"tessera/internal/auth"
	"tessera/internal/block/tlsconn"
)

// counted is a TCP connection that counts the writes and the largest read
// asked of it.
type counted struct {
	net.Conn
	mu      sync.Mutex
	writes  int
	maxRead int
}

func (c *counted) Write(p []byte) (int, error) {
	c.mu.Lock()
	c.writes++
	c.mu.Unlock()
	return c.Conn.Write(p)
}

func (c *counted) Read(p []byte) (int, error) {
	c.mu.Lock()
	c.maxRead = max(c.maxRead, len(p))
	c.mu.Unlock()
	return c.Conn.Read(p)
}

func (c *counted) stats() (writes, maxRead int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.writes, c.maxRead
}

// pair returns both ends of a mutual-TLS connection on loopback, each over
// a counted TCP connection beneath a tlsconn.Conn, handshaken, with the
// identities package auth reads from them.
func pair(t *testing.T) (srv, cli *tls.Conn, srvRaw, cliRaw *counted) {
	t.Helper()
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
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	srvRaw, cliRaw = new(counted), new(counted)
	tln := tlsconn.Listener(acceptCounted{ln, srvRaw}, creds("b0", auth.RoleBlockd).ServerConfig())
	accepted := make(chan *tls.Conn, 1)
	go func() {
		c, err := tln.Accept()
		if err != nil {
			accepted <- nil
			return
		}
		tc := c.(*tls.Conn)
		if err := tc.Handshake(); err != nil {
			t.Errorf("server handshake: %v", err)
		}
		accepted <- tc
	}()
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		cliRaw.Conn = c
		return cliRaw, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := tlsconn.Dialer(dial, creds("mount", auth.RoleClientRW).ClientConfig())(ctx, "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	cli = c.(*tls.Conn)
	srv = <-accepted
	if srv == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { cli.Close(); srv.Close() })
	st := srv.ConnectionState()
	if id, err := auth.PeerIdentity(&st); err != nil || id.Name != "mount" || id.Role != auth.RoleClientRW {
		t.Fatalf("server sees the client as %v, %v; want mount (client-rw)", id, err)
	}
	if cs := cli.ConnectionState(); len(cs.VerifiedChains) == 0 {
		t.Fatal("client did not verify the server's chain")
	}
	return srv, cli, srvRaw, cliRaw
}

type acceptCounted struct {
	net.Listener
	c *counted
}

func (l acceptCounted) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	l.c.Conn = c
	return l.c, err
}

// send writes data on w (corked if cork) while r's peer reads it all, and
// checks it arrives intact.
func send(t *testing.T, w, r *tls.Conn, data []byte, cork bool) {
	t.Helper()
	got := make(chan []byte, 1)
	go func() {
		b := make([]byte, len(data))
		if _, err := io.ReadFull(r, b); err != nil {
			t.Errorf("read: %v", err)
		}
		got <- b
	}()
	uncork := func() error { return nil }
	if cork {
		uncork = tlsconn.Cork(w)
	}
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := uncork(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(<-got, data) {
		t.Fatal("the bytes received differ from the bytes sent")
	}
}

func block(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i * 7)
	}
	return b
}

// TestCorkGathersRecords: a 4 MiB Write under a cork reaches the socket in
// FlushSize pieces, where crypto/tls alone writes each 16 KiB record with
// its own write(2); the bytes arrive intact either way, and writes after
// the cork go straight out.
func TestCorkGathersRecords(t *testing.T) {
	srv, cli, srvRaw, _ := pair(t)
	const n = 4 << 20
	w0, _ := srvRaw.stats()
	send(t, srv, cli, block(n), false)
	w1, _ := srvRaw.stats()
	if w1-w0 < n>>14 {
		t.Fatalf("uncorked: %d writes for %d bytes; crypto/tls writes each 16 KiB record alone, want >= %d", w1-w0, n, n>>14)
	}
	send(t, srv, cli, block(n), true)
	w2, _ := srvRaw.stats()
	if want := n/tlsconn.FlushSize + 2; w2-w1 > want {
		t.Fatalf("corked: %d writes for %d bytes, want at most %d", w2-w1, n, want)
	}
	// Small writes in both directions after the cork, unbuffered: each is
	// read back before the next is sent.
	for i := range 3 {
		send(t, srv, cli, []byte{byte(i)}, false)
		send(t, cli, srv, []byte{byte(i)}, false)
	}
}

// TestCorksNest: bytes written under an inner cork wait for the outer
// one's end, and an uncork function works once.
func TestCorksNest(t *testing.T) {
	srv, cli, srvRaw, _ := pair(t)
	w0, _ := srvRaw.stats()
	outer := tlsconn.Cork(srv)
	inner := tlsconn.Cork(srv)
	if _, err := srv.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	inner()
	inner() // a second call does not end the outer cork
	if w, _ := srvRaw.stats(); w != w0 {
		t.Fatalf("%d writes reached the socket under a cork, want 0", w-w0)
	}
	if err := outer(); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 5)
	_ = cli.SetReadDeadline(time.Now().Add(time.Minute))
	if _, err := io.ReadFull(cli, b); err != nil || string(b) != "hello" {
		t.Fatalf("read %q, %v; want hello", b, err)
	}
}

// TestReadAhead: a read takes what the socket has queued (up to
// ReadAhead) in one go and hands it out at most MaxRecord bytes at a time,
// losing none; with nothing queued it waits as a plain read does.
func TestReadAhead(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	w, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	r, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	c := tlsconn.New(r)
	_ = c.SetReadDeadline(time.Now().Add(time.Minute))

	const total = 96 << 10 // fits in a new loopback socket's receive buffer
	data := block(total)
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	// Wait (bounded) until all of it is queued at the reader.
	for i := 0; queued(t, r) < total; i++ {
		if i == 1000 {
			t.Fatalf("only %d of %d bytes queued after 10 s", queued(t, r), total)
		}
		time.Sleep(10 * time.Millisecond)
	}
	buf := make([]byte, 1<<20)
	var got []byte
	n, err := c.Read(buf)
	if err != nil || n == 0 || n > tlsconn.MaxRecord {
		t.Fatalf("first read: %d bytes, %v; want 1..%d", n, err, tlsconn.MaxRecord)
	}
	got = append(got, buf[:n]...)
	if q := queued(t, r); q != 0 {
		t.Fatalf("%d bytes still queued at the socket after the first read, want 0 (all read ahead)", q)
	}
	for len(got) < total {
		n, err := c.Read(buf)
		if n > tlsconn.MaxRecord {
			t.Fatalf("a read returned %d bytes, want at most %d", n, tlsconn.MaxRecord)
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, buf[:n]...)
	}
	if !bytes.Equal(got, data) {
		t.Fatal("the bytes read differ from the bytes written")
	}
	// Nothing queued: a read waits for the next bytes.
	go func() {
		time.Sleep(20 * time.Millisecond)
		w.Write([]byte("next"))
	}()
	n, err = c.Read(buf)
	if err != nil || string(buf[:n]) != "next" {
		t.Fatalf("read after a wait: %q, %v; want next", buf[:n], err)
	}
	w.Close()
	if n, err := c.Read(buf); n != 0 || err != io.EOF {
		t.Fatalf("read at the end: %d, %v; want 0, EOF", n, err)
	}
}

// queued is how many bytes wait in c's socket (SIOCINQ).
func queued(t *testing.T, c net.Conn) int {
	t.Helper()
	raw, err := c.(syscall.Conn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var n int
	_ = raw.Control(func(fd uintptr) {
		n, err = unix.IoctlGetInt(int(fd), unix.SIOCINQ)
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestFailedGatherFailsLaterWrites: a gathered write that fails is
// reported by the uncork, and no later write gets through (the peer must
// see a cut stream, not one with a hole).
func TestFailedGatherFailsLaterWrites(t *testing.T) {
	srv, _, srvRaw, _ := pair(t)
	uncork := tlsconn.Cork(srv)
	if _, err := srv.Write([]byte("lost")); err != nil {
		t.Fatal(err)
	}
	srvRaw.Conn.Close() // the socket goes away under the gathered bytes
	if err := uncork(); err == nil {
		t.Fatal("uncork after the socket closed: no error")
	}
	if _, err := srv.NetConn().Write([]byte("x")); err == nil {
		t.Fatal("a write after a failed gathered write succeeded")
	}
}

// TestRaw: the socket and Held beneath a *tls.Conn over a Conn; a plain
// connection as it is; none for TLS over anything else (its read-ahead is
// unknown).
func TestRaw(t *testing.T) {
	srv, _, srvRaw, _ := pair(t)
	if raw, held := tlsconn.Raw(srv); raw != net.Conn(srvRaw) || held != tlsconn.Held {
		t.Fatalf("Raw(tls over Conn) = %v, %d; want the TCP connection, %d", raw, held, tlsconn.Held)
	}
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if raw, held := tlsconn.Raw(a); raw != a || held != 0 {
		t.Fatalf("Raw(plain) = %v, %d; want it, 0", raw, held)
	}
	if raw, _ := tlsconn.Raw(tls.Client(a, &tls.Config{})); raw != nil {
		t.Fatalf("Raw(tls over a pipe) = %v, want nil", raw)
	}
	if tlsconn.Cork(a)() != nil || tlsconn.Cork(nil)() != nil {
		t.Fatal("Cork of a plain or nil connection is not a no-op")
	}
}
