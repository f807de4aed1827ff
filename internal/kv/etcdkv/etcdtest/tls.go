package etcdtest

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"testing"
	"time"

	"tessera/internal/auth"
)

// PKI is the certificate authority of a TLS cluster and the files of the
// client certificate it issued (role meta): what `--meta-db
// etcd://…?ca=&cert=&key=` names.
type PKI struct {
	CAFile, CertFile, KeyFile string
	dir                       string
	ca                        *auth.CA
}

func newPKI(t testing.TB, dir string) *PKI {
	t.Helper()
	ca, err := auth.NewCA("etcdtest", 24*time.Hour)
	if err != nil {
		t.Fatalf("etcdtest: %v", err)
	}
	if err := ca.Save(dir); err != nil {
		t.Fatalf("etcdtest: %v", err)
	}
	p := &PKI{CAFile: filepath.Join(dir, auth.CACertFile), dir: dir, ca: ca}
	p.CertFile, p.KeyFile = p.issue(t, "meta-client")
	return p
}

// issue writes a certificate for name, valid for 127.0.0.1, and returns its
// files.
func (p *PKI) issue(t testing.TB, name string) (cert, key string) {
	t.Helper()
	c, k, err := p.ca.Issue(auth.Request{Name: name, Role: auth.RoleMeta, Hosts: []string{"127.0.0.1"}, Validity: 24 * time.Hour})
	if err != nil {
		t.Fatalf("etcdtest: %v", err)
	}
	cert, key = auth.CertFiles(p.dir, name)
	if err := os.WriteFile(cert, c, 0o644); err != nil {
		t.Fatalf("etcdtest: %v", err)
	}
	if err := os.WriteFile(key, k, 0o600); err != nil {
		t.Fatalf("etcdtest: %v", err)
	}
	return cert, key
}

// ClientTLS is the client configuration with the client certificate.
func (p *PKI) ClientTLS(t testing.TB) *tls.Config {
	t.Helper()
	pem, err := os.ReadFile(p.CAFile)
	if err != nil {
		t.Fatalf("etcdtest: %v", err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	cert, err := tls.LoadX509KeyPair(p.CertFile, p.KeyFile)
	if err != nil {
		t.Fatalf("etcdtest: %v", err)
	}
	return &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
}
