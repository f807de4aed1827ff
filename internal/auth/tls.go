package auth

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
)

// Credentials are one process's certificate and key and the cluster CA it
// trusts; see the package comment.
type Credentials struct {
	Cert tls.Certificate
	CA   *x509.CertPool
	// CACert is the CA's certificate, whose key verifies tokens
	// (Tokens).
	CACert   *x509.Certificate
	Identity Identity // what Cert names; zero without a certificate
	// Token, if set, is a bearer token (tokens.go) the holder's clients
	// send: an admin command run by a person with the CA certificate and a
	// token instead of a certificate of their own (LoadCAOnly).
	Token string
}

// HasCert reports whether the credentials hold a certificate of their own
// (not just the CA and a token).
func (c *Credentials) HasCert() bool { return len(c.Cert.Certificate) > 0 }

// LoadCAOnly reads just the CA certificate: credentials that verify
// servers and present no certificate, for a client that authenticates
// with a token.
func LoadCAOnly(caFile, token string) (*Credentials, error) {
	caPEM, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("load CA: %w", err)
	}
	caCert, err := parseCertPEM(caPEM)
	if err != nil {
		return nil, fmt.Errorf("the CA file %s: %w", caFile, err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	return &Credentials{CA: pool, CACert: caCert, Token: token}, nil
}

// LoadCredentials reads a PEM certificate, its key and the CA certificate.
func LoadCredentials(certFile, keyFile, caFile string) (*Credentials, error) {
	if certFile == "" || keyFile == "" || caFile == "" {
		return nil, fmt.Errorf("TLS needs a certificate, a key and a CA (--tls-cert, --tls-key, --tls-ca); got cert=%q key=%q ca=%q", certFile, keyFile, caFile)
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("load certificate %s with key %s: %w", certFile, keyFile, err)
	}
	caPEM, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("load CA: %w", err)
	}
	return NewCredentials(cert, caPEM)
}

// NewCredentials makes Credentials of a loaded key pair and the CA's PEM.
func NewCredentials(cert tls.Certificate, caPEM []byte) (*Credentials, error) {
	caCert, err := parseCertPEM(caPEM)
	if err != nil {
		return nil, fmt.Errorf("the CA file: %w", err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		return nil, fmt.Errorf("parse certificate: %w", err)
	}
	cert.Leaf = leaf
	id, err := IdentityFromCert(leaf)
	if err != nil {
		return nil, err
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
		return nil, fmt.Errorf("certificate %q does not verify against the CA: %w", id.Name, err)
	}
	return &Credentials{Cert: cert, CA: pool, CACert: caCert, Identity: id}, nil
}

// Tokens returns the verifier of tokens signed by the credentials' CA.
func (c *Credentials) Tokens() TokenVerifier {
	v, err := NewTokenVerifier(c.CACert, nil)
	if err != nil {
		return refuseTokens{err}
	}
	return v
}

// refuseTokens refuses every token: the CA cannot have signed any.
type refuseTokens struct{ err error }

func (r refuseTokens) Verify(string) (Identity, error) {
	return Identity{}, fmt.Errorf("%w: %v", ErrUnauthenticated, r.err)
}

// ServerConfig is the tls.Config a listening role serves with: its own
// certificate, TLS 1.3, and client certificates verified against the CA
// when given. A caller without one (a person with a token) gets through the
// handshake; the transport then requires a token (package comment).
func (c *Credentials) ServerConfig() *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{c.Cert},
		ClientAuth:   tls.VerifyClientCertIfGiven,
		ClientCAs:    c.CA,
	}
}

// ClientConfig is the tls.Config a role dials with: the server verified
// against the CA (and its name against the address dialled), its own
// certificate presented when it has one.
func (c *Credentials) ClientConfig() *tls.Config {
	cfg := &tls.Config{MinVersion: tls.VersionTLS13, RootCAs: c.CA}
	if c.HasCert() {
		cfg.Certificates = []tls.Certificate{c.Cert}
	}
	return cfg
}

// PeerIdentity returns the identity of a TLS peer whose chain the handshake
// verified; ErrUnauthenticated when it presented no certificate.
func PeerIdentity(st *tls.ConnectionState) (Identity, error) {
	if st == nil || len(st.VerifiedChains) == 0 || len(st.VerifiedChains[0]) == 0 {
		return Identity{}, fmt.Errorf("%w: no client certificate", ErrUnauthenticated)
	}
	return IdentityFromCert(st.VerifiedChains[0][0])
}
