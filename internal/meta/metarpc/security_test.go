package metarpc_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"tessera/internal/auth"
	"tessera/internal/logtest"
	"tessera/internal/meta"
	"tessera/internal/meta/metarpc"
	pb "tessera/internal/meta/metarpc/metapb"
)

// pki is a cluster CA and the server's credentials.
type pki struct {
	ca     *auth.CA
	server *auth.Credentials
}

func newPKI(t testing.TB) *pki {
	ca, err := auth.NewCA("cluster", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return &pki{ca: ca, server: issue(t, ca, auth.Request{Name: "meta", Role: auth.RoleMeta, Hosts: []string{"127.0.0.1"}, Validity: time.Hour})}
}

// issue makes credentials for req; an expired one (negative validity) is
// put together without NewCredentials, which would refuse it.
func issue(t testing.TB, ca *auth.CA, req auth.Request) *auth.Credentials {
	t.Helper()
	cp, kp, err := ca.Issue(req)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(cp, kp)
	if err != nil {
		t.Fatal(err)
	}
	if req.Validity < 0 {
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(ca.PEM)
		return &auth.Credentials{Cert: cert, CA: pool, Identity: auth.Identity{Name: req.Name, Role: req.Role}}
	}
	c, err := auth.NewCredentials(cert, ca.PEM)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// caOnly is credentials that verify the server but present no certificate
// (a person with a token).
func (p *pki) caOnly() *auth.Credentials {
	return &auth.Credentials{CA: p.server.CA}
}

// serveOpts starts Serve with opts (its logger writing to the returned
// buffer) and stops it at cleanup.
func serveOpts(t testing.TB, api meta.API, opts metarpc.ServeOptions) (string, *logtest.Buffer) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	logs := &logtest.Buffer{}
	opts.Logger = slog.New(slog.NewTextHandler(logs, nil))
	done := make(chan error, 1)
	go func() { done <- metarpc.Serve(ln, api, opts) }()
	t.Cleanup(func() {
		ln.Close()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return ln.Addr().String(), logs
}

// unreachableAPI is a meta.API that must never be called: its embedded
// interface is nil, so any call panics and fails the test binary.
type unreachableAPI struct{ meta.API }

// tokens is a fake auth.TokenVerifier.
type tokens map[string]auth.Identity

func (tk tokens) Verify(tok string) (auth.Identity, error) {
	if id, ok := tk[tok]; ok {
		return id, nil
	}
	return auth.Identity{}, fmt.Errorf("token %q: %w", tok, auth.ErrUnauthenticated)
}

// rawConn dials addr with grpc directly (no metarpc.Client), TLS with cfg.
func rawConn(t testing.TB, addr string, cfg *tls.Config) *grpc.ClientConn {
	cc, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

// callEvery calls every method and stream of the service descriptor, so
// that a method added later cannot be missed, and returns each one's error.
func callEvery(t *testing.T, cc *grpc.ClientConn, md ...string) map[string]error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang only
	defer cancel()
	ctx = metadata.AppendToOutgoingContext(ctx, append([]string{"tessera-protocol", "2"}, md...)...)
	errs := map[string]error{}
	for _, sd := range serviceDescs {
		for _, m := range sd.Methods {
			errs[m.MethodName] = cc.Invoke(ctx, "/"+sd.ServiceName+"/"+m.MethodName, &pb.Empty{}, &pb.Empty{})
		}
		for _, s := range sd.Streams {
			st, err := cc.NewStream(ctx, &sd.Streams[0], "/"+sd.ServiceName+"/"+s.StreamName)
			if err == nil {
				st.SendMsg(&pb.Ack{})
				err = st.RecvMsg(&pb.CallbackBatch{})
			}
			errs[s.StreamName] = err
		}
	}
	if len(errs) != methodCount() || len(errs) < 30 {
		t.Fatalf("called %d methods of descriptors of %d", len(errs), methodCount())
	}
	return errs
}

// serviceDescs are the protocol's services, one per concern.
var serviceDescs = []*grpc.ServiceDesc{&pb.FSService_ServiceDesc, &pb.ClusterService_ServiceDesc,
	&pb.SessionsService_ServiceDesc, &pb.FilesetService_ServiceDesc, &pb.WritebackService_ServiceDesc,
	&pb.QuotaService_ServiceDesc}

// methodCount is how many methods and streams the services have.
func methodCount() int {
	n := 0
	for _, sd := range serviceDescs {
		n += len(sd.Methods) + len(sd.Streams)
	}
	return n
}

// TestEveryMethodRefusedWithoutCredentials: on a TLS port, a caller with
// neither a certificate nor a valid token reaches no method (the API behind
// panics if called), gets Unauthenticated naming what was missing, and
// the refusals are logged with the peer, one line per interval (a frozen
// clock: one line in all), the next line counting those held back.
func TestEveryMethodRefusedWithoutCredentials(t *testing.T) {
	p := newPKI(t)
	clk := &frozenClock{at: time.Unix(1000, 0)}
	addr, logs := serveOpts(t, unreachableAPI{}, metarpc.ServeOptions{Creds: p.server, Tokens: tokens{}}.LogClock(clk.now))
	cc := rawConn(t, addr, p.caOnly().ClientConfig())
	for name, err := range callEvery(t, cc) {
		if status.Code(err) != codes.Unauthenticated || !strings.Contains(err.Error(), "no client certificate and no bearer token") {
			t.Errorf("%s without credentials: %v, want Unauthenticated naming the missing certificate and token", name, err)
		}
	}
	for name, err := range callEvery(t, cc, "authorization", "Bearer forged") {
		if status.Code(err) != codes.Unauthenticated || !strings.Contains(err.Error(), "bearer token") {
			t.Errorf("%s with an unknown token: %v, want Unauthenticated about the token", name, err)
		}
	}
	if n := strings.Count(logs.String(), "meta rpc refused a call"); n != 1 {
		t.Errorf("%d lines for %d refusals, want 1:\n%s", n, 2*methodCount(), logs)
	}
	if !strings.Contains(logs.String(), "peer=127.0.0.1:") || !strings.Contains(logs.String(), "method=/tessera.meta.v1.") {
		t.Errorf("refusals logged without peer or method:\n%s", logs)
	}
	clk.add(time.Minute)
	callEvery(t, cc)
	held := 2*methodCount() - 1
	if n := strings.Count(logs.String(), "meta rpc refused a call"); n != 2 || !strings.Contains(logs.String(), fmt.Sprintf("suppressed=%d", held)) {
		t.Errorf("a minute later: %d lines, want 2, the second with suppressed=%d:\n%s", n, held, logs)
	}

	// Through the Client: the error wraps auth.ErrUnauthenticated.
	c, err := metarpc.Dial(addr, metarpc.DialOptions{Creds: p.caOnly()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.GetAttr(context.Background(), meta.RootIno); !errors.Is(err, auth.ErrUnauthenticated) || !errors.Is(err, syscall.EACCES) || meta.Unavailable(err) {
		t.Fatalf("GetAttr without credentials: %v, want ErrUnauthenticated and EACCES, no outage", err)
	}
	if _, err := c.Callbacks(context.Background(), 1, 0, time.Second); !errors.Is(err, auth.ErrUnauthenticated) {
		t.Fatalf("Callbacks without credentials: %v, want ErrUnauthenticated", err)
	}
}

// TestBadCertificatesFail: a certificate of another CA and an expired one
// of the right CA reach nothing.
func TestBadCertificatesFail(t *testing.T) {
	p := newPKI(t)
	addr, logs := serveOpts(t, unreachableAPI{}, metarpc.ServeOptions{Creds: p.server})
	other, err := auth.NewCA("other", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	rogue := issue(t, other, auth.Request{Name: "rogue", Role: auth.RoleAdmin, Validity: time.Hour})
	rogue.CA = p.server.CA // it trusts the real server; the server must not trust it
	expired := issue(t, p.ca, auth.Request{Name: "old", Role: auth.RoleAdmin, Validity: -time.Minute})
	for name, creds := range map[string]*auth.Credentials{"another CA": rogue, "expired": expired} {
		c, err := metarpc.Dial(addr, metarpc.DialOptions{Creds: creds})
		if err == nil {
			_, err = c.GetAttr(context.Background(), meta.RootIno)
			c.Close()
		}
		if err == nil || !errors.Is(err, syscall.EIO) && !errors.Is(err, auth.ErrUnauthenticated) {
			t.Errorf("certificate of %s: %v, want a failure", name, err)
		}
		t.Logf("%s: %v", name, err)
	}
	if !strings.Contains(logs.String(), "handshake: ") || !strings.Contains(logs.String(), "expired") {
		t.Errorf("the expired certificate's handshake was not logged:\n%s", logs)
	}
}

// whoAPI is a Service whose GetAttr reports who called, and whose Rmdir
// is denied as an authorizing decorator would.
type whoAPI struct {
	meta.API
	mu  sync.Mutex
	who []auth.Identity
}

func (w *whoAPI) GetAttr(ctx context.Context, ino meta.Ino) (meta.Inode, error) {
	id, ok := auth.FromContext(ctx)
	if !ok {
		return meta.Inode{}, errors.New("no identity in the call's context")
	}
	w.mu.Lock()
	w.who = append(w.who, id)
	w.mu.Unlock()
	return w.API.GetAttr(ctx, ino)
}

func (w *whoAPI) Rmdir(ctx context.Context, parent meta.Ino, name string) error {
	id, _ := auth.FromContext(ctx)
	return id.Check(auth.Administer)
}

func (w *whoAPI) last() auth.Identity {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.who[len(w.who)-1]
}

// TestIdentityReachesTheAPI: the API sees the certificate's or the token's
// identity; a denial comes back as auth.ErrDenied and EACCES; a plain port
// calls everyone auth.Insecure.
func TestIdentityReachesTheAPI(t *testing.T) {
	ctx := context.Background()
	p := newPKI(t)
	api := &whoAPI{API: newService(t)}
	ops := auth.Identity{Name: "alice", Role: auth.RoleAdmin}
	addr, logs := serveOpts(t, api, metarpc.ServeOptions{Creds: p.server, Tokens: tokens{"s3cret": ops}})

	ro := issue(t, p.ca, auth.Request{Name: "mount-ro", Role: auth.RoleClientRO, Root: "/proj", Validity: time.Hour})
	c, err := metarpc.Dial(addr, metarpc.DialOptions{Creds: ro})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.GetAttr(ctx, meta.RootIno); err != nil {
		t.Fatal(err)
	}
	if id := api.last(); id.Name != "mount-ro" || id.Role != auth.RoleClientRO || id.Root != "/proj" || id.Via != "cert" {
		t.Fatalf("API saw %+v, want the certificate's identity", id)
	}
	err = c.Rmdir(ctx, meta.RootIno, "x")
	if !errors.Is(err, auth.ErrDenied) || !errors.Is(err, syscall.EACCES) || meta.Unavailable(err) {
		t.Fatalf("denied call: %v, want auth.ErrDenied and EACCES", err)
	}
	if !strings.Contains(logs.String(), "meta rpc refused a call") || !strings.Contains(logs.String(), "mount-ro") {
		t.Errorf("the denial was not logged with who:\n%s", logs)
	}

	tc, err := metarpc.Dial(addr, metarpc.DialOptions{Creds: p.caOnly(), Token: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	if _, err := tc.GetAttr(ctx, meta.RootIno); err != nil {
		t.Fatal(err)
	}
	if id := api.last(); id.Name != "alice" || id.Role != auth.RoleAdmin || id.Via != "token" {
		t.Fatalf("API saw %+v, want the token's identity", id)
	}

	plain := dial(t, serve(t, api))
	if _, err := plain.GetAttr(ctx, meta.RootIno); err != nil {
		t.Fatal(err)
	}
	if id := api.last(); id != auth.Insecure {
		t.Fatalf("API saw %+v on a plain port, want auth.Insecure", id)
	}
	if _, err := metarpc.Dial(addr, metarpc.DialOptions{Token: "s3cret"}); err == nil {
		t.Fatal("a token was accepted for a plain TCP dial")
	}
}

// TestProtocolVersionHandshake: a client of another version is refused by
// the server, and a client refuses a server of another version, each with
// both numbers in the message.
func TestProtocolVersionHandshake(t *testing.T) {
	ctx := context.Background()
	svc := newService(t)
	v1, _ := serveOpts(t, svc, metarpc.ServeOptions{}.SpeakProtocol(1))
	c2, err := metarpc.Dial(v1, metarpc.DialOptions{}.SpeakProtocol(2))
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	_, err = c2.GetAttr(ctx, meta.RootIno)
	if err == nil || !strings.Contains(err.Error(), "client speaks protocol 2, server 1") || meta.Unavailable(err) || !errors.Is(err, syscall.EIO) {
		t.Fatalf("v2 client, v1 server: %v, want \"client speaks protocol 2, server 1\" (EIO, no outage)", err)
	}
	if _, err := c2.Callbacks(ctx, 1, 0, time.Second); err == nil || !strings.Contains(err.Error(), "client speaks protocol 2, server 1") {
		t.Fatalf("v2 client's callbacks, v1 server: %v", err)
	}

	// A server of version 3 that still answered a v2 call: the client
	// refuses the answer.
	v3, _ := serveOpts(t, svc, metarpc.ServeOptions{}.SpeakProtocol(3))
	c1 := dial(t, v3)
	_, err = c1.GetAttr(ctx, meta.RootIno)
	if err == nil || !strings.Contains(err.Error(), "client speaks protocol 2, server 3") {
		t.Fatalf("v2 client, v3 server: %v, want \"client speaks protocol 2, server 3\"", err)
	}
}

// TestOldClientToldItsVersion: a protocol 1 client calls the one Meta
// service version 1 had, which this server does not serve; it is told its
// version is not the server's (FAILED_PRECONDITION, both numbers), as the
// version check tells any peer of another version, and the refusal is
// logged. A call of this version to a method no service has gets
// Unimplemented naming it. Before the unknown-service handler, both got
// gRPC's bare "unknown service".
func TestOldClientToldItsVersion(t *testing.T) {
	addr, logs := serveOpts(t, newService(t), metarpc.ServeOptions{})
	cc, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx := metadata.AppendToOutgoingContext(context.Background(), "tessera-protocol", "1")
	err = cc.Invoke(ctx, "/tessera.meta.v1.Meta/GetAttr", &pb.InoRequest{Ino: 1}, &pb.Inode{})
	if status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "client speaks protocol 1, server 2") {
		t.Errorf("protocol 1 call of Meta/GetAttr: %v, want FailedPrecondition \"client speaks protocol 1, server 2\"", err)
	}
	if !strings.Contains(logs.String(), "refused a call") || !strings.Contains(logs.String(), "Meta/GetAttr") {
		t.Errorf("the old client's call is not logged:\n%s", logs)
	}
	ctx = metadata.AppendToOutgoingContext(context.Background(), "tessera-protocol", "2")
	err = cc.Invoke(ctx, "/tessera.meta.v1.FSService/NoSuchCall", &pb.Empty{}, &pb.Empty{})
	if status.Code(err) != codes.Unimplemented || !strings.Contains(err.Error(), "FSService/NoSuchCall") {
		t.Errorf("a call of no method: %v, want Unimplemented naming it", err)
	}
}

// frozenClock is the clock of a server's refusal logs: time moves only
// when a test moves it.
type frozenClock struct {
	mu sync.Mutex
	at time.Time
}

func (c *frozenClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.at }

func (c *frozenClock) add(d time.Duration) { c.mu.Lock(); c.at = c.at.Add(d); c.mu.Unlock() }

// TestRefusedHandshakesLogged: a probe of a TLS port with connections
// that fail their handshake (garbage, no certificate) writes one line per
// interval, not one per connection (the issue saw 1,106 from one probe).
func TestRefusedHandshakesLogged(t *testing.T) {
	p := newPKI(t)
	clk := &frozenClock{at: time.Unix(1000, 0)}
	addr, logs := serveOpts(t, unreachableAPI{}, metarpc.ServeOptions{Creds: p.server}.LogClock(clk.now))
	const n = 40
	for range n {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		c.Write(bytes.Repeat([]byte("GET / HTTP/1.1\r\n"), 64))
		waitClosed(t, c, "a connection sending garbage")
		c.Close()
	}
	// Each line is written before its connection is closed.
	if got := strings.Count(logs.String(), "meta rpc refused a connection"); got != 1 {
		t.Errorf("%d lines for %d refused handshakes, want 1:\n%s", got, n, logs)
	}
}
