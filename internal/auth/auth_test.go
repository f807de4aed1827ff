package auth

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"path/filepath"
	"testing"
	"time"
)

func issue(t *testing.T, ca *CA, req Request) *Credentials {
	t.Helper()
	if req.Validity == 0 {
		req.Validity = time.Hour
	}
	cp, kp, err := ca.Issue(req)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(cp, kp)
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewCredentials(cert, ca.PEM)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestIssueCarriesIdentity(t *testing.T) {
	ca, err := NewCA("test", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	c := issue(t, ca, Request{Name: "alice", Role: RoleClientRO, Root: "/proj"})
	want := Identity{Name: "alice", Role: RoleClientRO, Root: "/proj", Via: "cert"}
	if c.Identity != want {
		t.Fatalf("identity %+v, want %+v", c.Identity, want)
	}
	if _, _, err := ca.Issue(Request{Name: "x", Role: "root", Validity: time.Hour}); err == nil {
		t.Fatal("issued a certificate for an unknown role")
	}
	if _, _, err := ca.Issue(Request{Name: "x", Role: RoleAdmin, Root: "proj/../x", Validity: time.Hour}); err == nil {
		t.Fatal("issued a certificate with an unclean root")
	}
}

func TestRolesTable(t *testing.T) {
	cases := []struct {
		r  Role
		p  Permission
		ok bool
	}{
		{RoleClientRO, ReadNamespace, true},
		{RoleClientRO, WriteNamespace, false},
		{RoleClientRO, WriteBlocks, false},
		{RoleClientRW, WriteBlocks, true},
		{RoleClientRW, ManageBlocks, false},
		{RoleBlockd, RegisterServer, true},
		{RoleBlockd, ReadBlocks, false},
		{RoleMeta, ManageBlocks, true},
		{RoleMeta, Administer, false},
		{RoleAdmin, Administer, true},
	}
	for _, c := range cases {
		id := Identity{Name: "n", Role: c.r}
		err := id.Check(c.p)
		if (err == nil) != c.ok {
			t.Errorf("%s %v: err %v, want allowed=%v", c.r, c.p, err, c.ok)
		}
		if err != nil && !errors.Is(err, ErrDenied) {
			t.Errorf("%s %v: %v is not ErrDenied", c.r, c.p, err)
		}
	}
}

func TestSaveLoadCA(t *testing.T) {
	dir := t.TempDir()
	ca, err := NewCA("test", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := ca.Save(dir); err != nil {
		t.Fatal(err)
	}
	back, err := LoadCA(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !back.Cert.Equal(ca.Cert) || !back.Key.Equal(ca.Key) {
		t.Fatal("CA read back differs")
	}
	if _, err := LoadCA(filepath.Join(dir, "nope")); err == nil {
		t.Fatal("loaded a CA from a missing directory")
	}
}

// handshake runs a TLS handshake between server and client credentials
// over a real loopback connection and returns what the server saw.
func handshake(t *testing.T, srv *tls.Config, cli *tls.Config) (Identity, error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	type result struct {
		id  Identity
		err error
	}
	got := make(chan result, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- result{err: err}
			return
		}
		defer c.Close()
		tc := tls.Server(c, srv)
		if err := tc.Handshake(); err != nil {
			got <- result{err: err}
			return
		}
		st := tc.ConnectionState()
		id, err := PeerIdentity(&st)
		got <- result{id, err}
		io.WriteString(tc, "x")
	}()
	cli = cli.Clone()
	cli.ServerName = "127.0.0.1"
	c, err := tls.Dial("tcp", ln.Addr().String(), cli)
	if err == nil {
		var b [1]byte
		_, err = c.Read(b[:])
		c.Close()
	}
	r := <-got
	if r.err != nil {
		return Identity{}, r.err
	}
	return r.id, err
}

func TestMutualTLS(t *testing.T) {
	ca, _ := NewCA("cluster", time.Hour)
	srv := issue(t, ca, Request{Name: "meta", Role: RoleMeta, Hosts: []string{"127.0.0.1"}})
	cli := issue(t, ca, Request{Name: "mount", Role: RoleClientRW})
	id, err := handshake(t, srv.ServerConfig(), cli.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	if id.Name != "mount" || id.Role != RoleClientRW {
		t.Fatalf("server saw %+v", id)
	}

	// A certificate of another CA fails the handshake.
	other, _ := NewCA("other", time.Hour)
	rogue := issue(t, other, Request{Name: "rogue", Role: RoleAdmin})
	rc := rogue.ClientConfig()
	rc.RootCAs = srv.CA
	if _, err := handshake(t, srv.ServerConfig(), rc); err == nil {
		t.Fatal("a certificate of another CA was accepted")
	}

	// An expired certificate fails too.
	cp, kp, err := ca.Issue(Request{Name: "old", Role: RoleAdmin, Validity: -time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	kpair, _ := tls.X509KeyPair(cp, kp)
	oc := cli.ClientConfig()
	oc.Certificates = []tls.Certificate{kpair}
	if _, err := handshake(t, srv.ServerConfig(), oc); err == nil {
		t.Fatal("an expired certificate was accepted")
	}

	// No certificate: the handshake passes, the identity is unknown.
	nc := cli.ClientConfig()
	nc.Certificates = nil
	if _, err := handshake(t, srv.ServerConfig(), nc); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("no client certificate: %v, want ErrUnauthenticated", err)
	}
}

func TestGatewayRole(t *testing.T) {
	r, err := ParseRole("gateway")
	if err != nil || r != RoleGateway {
		t.Fatalf("ParseRole(gateway): %q, %v", r, err)
	}
	for p, want := range map[Permission]bool{ReadNamespace: true, WriteNamespace: true, ReadBlocks: true,
		WriteBlocks: true, CacheHome: true, Administer: false, ManageBlocks: false, RegisterServer: false} {
		if RoleGateway.Can(p) != want {
			t.Errorf("gateway can %v: %v, want %v", p, !want, want)
		}
	}
	for _, r := range []Role{RoleClientRW, RoleClientRO, RoleBlockd, RoleMeta} {
		if r.Can(CacheHome) {
			t.Errorf("%s can %v", r, CacheHome)
		}
	}
}
