package server_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tessera/internal/auth"
	"tessera/internal/block"
	"tessera/internal/block/client"
	"tessera/internal/block/disk"
	"tessera/internal/block/server"
	"tessera/internal/logtest"
)

// secure is a block server serving TLS on loopback with credentials of
// the test CA.
type secure struct {
	ca    *auth.CA
	addr  string
	log   *logtest.Buffer
	block block.Hash // a block the store holds
}

func issueCreds(t *testing.T, ca *auth.CA, name string, role auth.Role, validity time.Duration) *auth.Credentials {
	t.Helper()
	cp, kp, err := ca.Issue(auth.Request{Name: name, Role: role, Hosts: []string{"127.0.0.1"}, Validity: validity})
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(cp, kp)
	if err != nil {
		t.Fatal(err)
	}
	if validity < 0 { // NewCredentials refuses an expired certificate; build by hand
		return &auth.Credentials{Cert: cert, CACert: ca.Cert, CA: certPool(ca)}
	}
	c, err := auth.NewCredentials(cert, ca.PEM)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func startSecure(t *testing.T) *secure {
	t.Helper()
	ca, err := auth.NewCA("test", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	st, err := disk.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	data := []byte("a block to read")
	h := block.Sum(data)
	if err := st.Put(context.Background(), h, data); err != nil {
		t.Fatal(err)
	}
	logs := new(logtest.Buffer)
	creds := issueCreds(t, ca, "b0", auth.RoleBlockd, time.Hour)
	hd := server.New(st, server.Options{Creds: creds, Logger: slog.New(slog.NewTextHandler(logs, nil)), RefusalLogEvery: time.Hour})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := server.NewHTTPServer(ln.Addr().String(), hd, slog.New(slog.NewTextHandler(logs, nil)))
	go srv.Serve(server.Listener(ln, creds))
	t.Cleanup(func() { srv.Close() })
	return &secure{ca: ca, addr: ln.Addr().String(), log: logs, block: h}
}

// do sends one request of rt's method to its pattern (with s.block for
// {hex}) through a client with tc, and returns the status.
func (s *secure) do(t *testing.T, tc *tls.Config, method, pattern, token string) (int, error) {
	t.Helper()
	path := strings.ReplaceAll(pattern, "{hex}", s.block.String())
	var body io.Reader
	switch {
	case method == http.MethodPut:
		body = strings.NewReader("a block to read")
	case path == "/v1/has":
		body = bytes.NewReader(s.block[:])
	case path == "/v1/remove": // older-than 0: the block stays
		body = bytes.NewReader(append(s.block[:], make([]byte, 8)...))
	case method == http.MethodDelete:
		path += "?older-than=0"
	}
	req, err := http.NewRequest(method, "https://"+s.addr+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: tc}}
	defer hc.CloseIdleConnections()
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// methods returns the methods a route answers: a GET route answers HEAD.
func methods(rt server.Route) []string {
	if rt.Method == http.MethodGet {
		return []string{http.MethodGet, http.MethodHead}
	}
	return []string{rt.Method}
}

func TestEveryRouteRefusesCallersWithoutIdentity(t *testing.T) {
	s := startSecure(t)
	caOnly := &tls.Config{RootCAs: certPool(s.ca), MinVersion: tls.VersionTLS13}
	other, err := auth.NewCA("other", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	otherTok, err := other.Token(auth.TokenRequest{Name: "mallory", Role: auth.RoleAdmin, Validity: time.Hour}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, rt := range server.Routes() {
		for _, m := range methods(rt) {
			for name, tok := range map[string]string{"no credentials": "", "other CA's token": otherTok, "garbage token": "tt1.garbage"} {
				code, err := s.do(t, caOnly, m, rt.Pattern, tok)
				if err != nil || code != http.StatusUnauthorized {
					t.Errorf("%s %s with %s: status %d, %v; want 401", m, rt.Pattern, name, code, err)
				}
			}
		}
	}
	if n := len(server.Routes()); n < 9 {
		t.Fatalf("only %d routes in the table", n)
	}
	if _, err := s.do(t, caOnly, http.MethodGet, "/v1/list", ""); err != nil {
		t.Fatal(err)
	}
	// Bounded: one line per interval (an hour here) however many refusals.
	if n := strings.Count(s.log.String(), "block request refused"); n != 1 {
		t.Errorf("%d refusal lines logged, want 1 (rate-bounded):\n%s", n, s.log.String())
	}
	if l := s.log.String(); !strings.Contains(l, "peer=127.0.0.1:") || !strings.Contains(l, "why=") {
		t.Errorf("the refusal log names no peer or reason:\n%s", l)
	}
}

func TestRoutesNeedTheirPermission(t *testing.T) {
	s := startSecure(t)
	for _, role := range auth.Roles {
		c := issueCreds(t, s.ca, "who-"+string(role), role, time.Hour)
		tok, err := s.ca.Token(auth.TokenRequest{Name: "tok-" + string(role), Role: role, Validity: time.Hour}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		caOnly := &tls.Config{RootCAs: certPool(s.ca), MinVersion: tls.VersionTLS13}
		for _, rt := range server.Routes() {
			for _, m := range methods(rt) {
				for via, call := range map[string]func() (int, error){
					"cert":  func() (int, error) { return s.do(t, c.ClientConfig(), m, rt.Pattern, "") },
					"token": func() (int, error) { return s.do(t, caOnly, m, rt.Pattern, tok) },
				} {
					code, err := call()
					if err != nil {
						t.Fatalf("%s %s as %s by %s: %v", m, rt.Pattern, role, via, err)
					}
					if allowed := role.Can(rt.Permission); allowed != (code != http.StatusForbidden) || code == http.StatusUnauthorized {
						t.Errorf("%s %s as %s by %s: status %d; role may %v: %v", m, rt.Pattern, role, via, code, rt.Permission, allowed)
					}
				}
			}
		}
	}
	// The cases the issue names: a read-only client cannot write or remove.
	ro := issueCreds(t, s.ca, "reader", auth.RoleClientRO, time.Hour)
	for _, m := range []string{http.MethodPut, http.MethodDelete} {
		if code, err := s.do(t, ro.ClientConfig(), m, "/v1/blocks/{hex}", ""); err != nil || code != http.StatusForbidden {
			t.Errorf("client-ro %s: status %d, %v; want 403", m, code, err)
		}
	}
	// Removing many blocks needs what removing one does (the meta
	// service's and admins'): a client's role cannot.
	for _, role := range auth.Roles {
		c := issueCreds(t, s.ca, "remover-"+string(role), role, time.Hour)
		want := http.StatusForbidden
		if role.Can(auth.ManageBlocks) {
			want = http.StatusOK
		}
		if code, err := s.do(t, c.ClientConfig(), http.MethodPost, "/v1/remove", ""); err != nil || code != want {
			t.Errorf("%s POST /v1/remove: status %d, %v; want %d", role, code, err, want)
		}
	}
	if auth.RoleClientRW.Can(auth.ManageBlocks) || !auth.RoleMeta.Can(auth.ManageBlocks) {
		t.Errorf("client-rw may manage blocks, or meta may not")
	}
	if l := s.log.String(); !strings.Contains(l, "block request refused") || !strings.Contains(l, "may not") {
		t.Errorf("refusal not logged with who and why:\n%s", l)
	}
}

func TestHandshakeRefusesForeignAndExpiredCertificates(t *testing.T) {
	s := startSecure(t)
	other, err := auth.NewCA("other", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	foreign := issueCreds(t, other, "mallory", auth.RoleAdmin, time.Hour)
	foreignCfg := foreign.ClientConfig()
	foreignCfg.RootCAs = certPool(s.ca) // it trusts the server; the server must not trust it
	// Present it even though the server asks for its CA's (a Go client
	// would otherwise send none, and get a 401).
	foreignCfg.Certificates = nil
	foreignCfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &foreign.Cert, nil }
	expired := issueCreds(t, s.ca, "old", auth.RoleAdmin, -time.Minute)
	for name, tc := range map[string]*tls.Config{"another CA's": foreignCfg, "an expired": expired.ClientConfig()} {
		code, err := s.do(t, tc, http.MethodGet, "/v1/list", "")
		if err == nil {
			t.Errorf("%s certificate: the handshake succeeded (status %d)", name, code)
		}
	}
	// net/http logs a failed handshake after the client saw it fail: wait
	// for the line (bounded).
	for i := 0; !strings.Contains(s.log.String(), "TLS handshake error from 127.0.0.1:"); i++ {
		if i == 200 {
			t.Errorf("the failed handshakes are not logged with the peer:\n%s", s.log.String())
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	// A client that does not trust the server's CA does not talk to it.
	code, err := s.do(t, foreign.ClientConfig(), http.MethodGet, "/v1/list", "")
	if err == nil {
		t.Errorf("a client of another CA accepted the server (status %d)", code)
	}
}

func TestClientSpeaksTLSWithCertsAndTokens(t *testing.T) {
	s := startSecure(t)
	ctx := context.Background()
	rw := issueCreds(t, s.ca, "mount", auth.RoleClientRW, time.Hour)
	c := client.New(s.addr, client.Options{Creds: rw})
	if got, err := c.Get(ctx, s.block); err != nil || string(got) != "a block to read" {
		t.Fatalf("get over TLS: %q, %v", got, err)
	}
	data := []byte("written by a mount")
	if err := c.Put(ctx, block.Sum(data), data); err != nil {
		t.Fatalf("put as client-rw: %v", err)
	}
	if _, err := c.Remove(ctx, s.block, time.Now().UnixNano()); !errors.Is(err, auth.ErrDenied) {
		t.Fatalf("remove as client-rw: %v, want auth.ErrDenied", err)
	}
	dir := t.TempDir()
	if err := s.ca.Save(dir); err != nil {
		t.Fatal(err)
	}
	tok, err := s.ca.Token(auth.TokenRequest{Name: "ops", Role: auth.RoleAdmin, Validity: time.Hour}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	admin, err := auth.LoadCAOnly(filepath.Join(dir, auth.CACertFile), tok)
	if err != nil {
		t.Fatal(err)
	}
	ac := client.New(s.addr, client.Options{Creds: admin})
	n := 0
	if err := ac.List(ctx, func(block.Info) error { n++; return nil }); err != nil || n != 2 {
		t.Fatalf("list with an admin token: %d blocks, %v; want 2", n, err)
	}
	anon, err := auth.LoadCAOnly(filepath.Join(dir, auth.CACertFile), "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.New(s.addr, client.Options{Creds: anon}).Get(ctx, s.block); !errors.Is(err, auth.ErrUnauthenticated) {
		t.Fatalf("get without certificate or token: %v, want auth.ErrUnauthenticated", err)
	}
}

func certPool(ca *auth.CA) *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}
