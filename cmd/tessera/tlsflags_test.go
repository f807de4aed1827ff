package main

import (
	"errors"
	"flag"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tessera/internal/auth"
	"tessera/internal/up"
)

func parseTLS(t *testing.T, admin bool, args ...string) *tlsFlags {
	t.Helper()
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	f := addTLSFlags(fs)
	if admin {
		f.token = fs.String("token", "", "")
	}
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestRoleNeedsTLSOrInsecureOnLoopback(t *testing.T) {
	machine := t.TempDir()
	t.Setenv(up.MachineTLSEnv, machine)
	roles := []auth.Role{auth.RoleBlockd}
	_, err := parseTLS(t, false).role("blockd", "", roles, "127.0.0.1:0")
	if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "--id") || !strings.Contains(err.Error(), "--insecure") {
		t.Fatalf("no flags, no id: %v; want a usage error naming --id and --insecure", err)
	}
	// Without flags: a certificate of this machine's CA, named as asked,
	// made once and then reused.
	m0, err := parseTLS(t, false).role("blockd", "b0", roles, "0.0.0.0:0")
	if err != nil || m0.Identity.Name != "b0" || m0.Identity.Role != auth.RoleBlockd {
		t.Fatalf("no flags: %+v, %v; want b0's blockd certificate of the machine CA", m0, err)
	}
	again, err := parseTLS(t, false).role("blockd", "b0", roles, "0.0.0.0:0")
	if err != nil || !again.Cert.Leaf.Equal(m0.Cert.Leaf) {
		t.Fatalf("second start without flags: %v; want the same certificate", err)
	}
	if _, err := auth.LoadCA(machine); err != nil {
		t.Fatalf("no machine CA in %s: %v", machine, err)
	}
	for _, l := range []string{"127.0.0.1:7400", "[::1]:0", "localhost:1"} {
		if c, err := parseTLS(t, false, "--insecure").role("blockd", "b0", roles, l); err != nil || c != nil {
			t.Errorf("--insecure on %s: %v, %v", l, c, err)
		}
	}
	for _, l := range []string{"0.0.0.0:7400", ":7400", "10.0.0.5:1", "example.org:1"} {
		if _, err := parseTLS(t, false, "--insecure").role("blockd", "b0", roles, l); err == nil || !strings.Contains(err.Error(), "loopback") {
			t.Errorf("--insecure on %s: %v; want a refusal", l, err)
		}
	}
	data := t.TempDir()
	lt, err := up.EnsureLocalTLS(data, 1)
	if err != nil {
		t.Fatal(err)
	}
	dir := up.TLSDir(data)
	certArgs := func(name string) []string {
		c, k := auth.CertFiles(dir, name)
		return []string{"--tls-cert", c, "--tls-key", k, "--tls-ca", filepath.Join(dir, "ca.crt")}
	}
	c, err := parseTLS(t, false, certArgs("b0")...).role("blockd", "b0", roles, "0.0.0.0:0")
	if err != nil || c.Identity != lt.Blocks[0].Identity {
		t.Fatalf("blockd certificate: %+v, %v", c, err)
	}
	if _, err := parseTLS(t, false, certArgs("mount")...).role("blockd", "b0", roles, "0.0.0.0:0"); err == nil || !strings.Contains(err.Error(), "needs one for role blockd") {
		t.Fatalf("a client-rw certificate for blockd: %v", err)
	}
	if _, err := parseTLS(t, false, append(certArgs("b0"), "--insecure")...).role("blockd", "b0", roles, "127.0.0.1:0"); err == nil {
		t.Fatal("--insecure with certificates accepted")
	}
}

func TestAdminFindsCredentials(t *testing.T) {
	data := t.TempDir()
	if _, err := parseTLS(t, true).admin("status", data); err == nil || !strings.Contains(err.Error(), "--insecure") {
		t.Fatalf("--data without DIR/tls: %v; want an error naming --insecure", err)
	}
	if _, err := up.EnsureLocalTLS(data, 1); err != nil {
		t.Fatal(err)
	}
	c, err := parseTLS(t, true).admin("status", data)
	if err != nil || c.Identity.Role != auth.RoleAdmin {
		t.Fatalf("--data DIR: %+v, %v", c, err)
	}
	ca, err := auth.LoadCA(up.TLSDir(data))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := ca.Token(auth.TokenRequest{Name: "ops", Role: auth.RoleAdmin, Validity: time.Hour}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	c, err = parseTLS(t, true, "--token", tok, "--tls-ca", filepath.Join(up.TLSDir(data), "ca.crt")).admin("status", "")
	if err != nil || c.Token != tok || c.HasCert() {
		t.Fatalf("--token: %+v, %v", c, err)
	}
	if _, err := parseTLS(t, true, "--token", tok).admin("status", ""); err == nil || !strings.Contains(err.Error(), "--tls-ca") {
		t.Fatalf("--token without a CA: %v", err)
	}
	if _, err := parseTLS(t, true).admin("status", ""); !errors.Is(err, errUsage) {
		t.Fatalf("no credentials: %v", err)
	}
	if c, err := parseTLS(t, true, "--insecure").admin("status", ""); err != nil || c != nil {
		t.Fatalf("--insecure: %v, %v", c, err)
	}
}
