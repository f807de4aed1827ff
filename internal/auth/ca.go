package auth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"
)

// CA is the cluster's certificate authority: it issues the certificates of
// every process and person (package comment, Certificates).
type CA struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
	// PEM is Cert encoded, as written to ca.crt.
	PEM []byte
}

// The files of a CA directory and of an issued certificate NAME.
const (
	CACertFile = "ca.crt"
	CAKeyFile  = "ca.key"
)

// CertFiles returns the certificate and key file names of name in dir.
func CertFiles(dir, name string) (cert, key string) {
	return filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
}

// NewCA makes a CA valid for validity from now.
func NewCA(name string, validity time.Duration) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("make CA key: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: name, Organization: []string{"tessera"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("make CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, Key: key, PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
}

// Request describes a certificate to issue.
type Request struct {
	Name string // CommonName: who holds it
	Role Role
	Root string // subtree the holder is confined to; "" for all
	// Hosts are the DNS names and IP addresses the holder serves on; a
	// certificate only used as a client needs none.
	Hosts    []string
	Validity time.Duration
}

// Issue makes a key and a certificate for req, both PEM encoded.
func (ca *CA) Issue(req Request) (certPEM, keyPEM []byte, err error) {
	if req.Name == "" {
		return nil, nil, errors.New("issue: a certificate needs a name")
	}
	if _, err := ParseRole(string(req.Role)); err != nil {
		return nil, nil, fmt.Errorf("issue %s: %w", req.Name, err)
	}
	root, err := CleanRoot(req.Root)
	if err != nil {
		return nil, nil, fmt.Errorf("issue %s: %w", req.Name, err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("issue %s: make key: %w", req.Name, err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: req.Name, Organization: []string{"tessera"}},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(req.Validity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		URIs:         []*url.URL{{Scheme: uriScheme, Opaque: "role=" + string(req.Role)}},
	}
	if root != "/" {
		tmpl.URIs = append(tmpl.URIs, &url.URL{Scheme: uriScheme, Opaque: "root=" + root})
	}
	for _, h := range req.Hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else if h != "" {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.Key)
	if err != nil {
		return nil, nil, fmt.Errorf("issue %s: %w", req.Name, err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), nil
}

// uriScheme is the scheme of the URI SANs that carry role and root.
const uriScheme = "tessera"

// IdentityFromCert reads the identity a verified certificate names.
func IdentityFromCert(c *x509.Certificate) (Identity, error) {
	id := Identity{Name: c.Subject.CommonName, Via: "cert"}
	for _, u := range c.URIs {
		if u.Scheme != uriScheme {
			continue
		}
		k, v, _ := strings.Cut(u.Opaque, "=")
		switch k {
		case "role":
			r, err := ParseRole(v)
			if err != nil {
				return Identity{}, fmt.Errorf("%w: certificate %q: %v", ErrUnauthenticated, id.Name, err)
			}
			id.Role = r
		case "root":
			id.Root = v
		}
	}
	if id.Role == "" {
		return Identity{}, fmt.Errorf("%w: certificate %q names no tessera role", ErrUnauthenticated, id.Name)
	}
	if id.Name == "" {
		return Identity{}, fmt.Errorf("%w: certificate without a CommonName", ErrUnauthenticated)
	}
	return id, nil
}

// CleanRoot checks a subtree path: absolute, no "." or ".." elements.
// "" is the whole namespace, "/".
func CleanRoot(root string) (string, error) {
	if root == "" {
		return "/", nil
	}
	if !strings.HasPrefix(root, "/") || path.Clean(root) != root {
		return "", fmt.Errorf("root %q must be a clean absolute path such as /proj", root)
	}
	return root, nil
}

// Save writes the CA to dir (ca.crt, and ca.key readable by its owner only).
func (ca *CA) Save(dir string) error {
	kder, err := x509.MarshalECPrivateKey(ca.Key)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if err := WriteFileAtomic(filepath.Join(dir, CAKeyFile), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		return err
	}
	return WriteFileAtomic(filepath.Join(dir, CACertFile), ca.PEM, 0o644)
}

// LoadCA reads a CA that Save wrote to dir.
func LoadCA(dir string) (*CA, error) {
	certPEM, err := os.ReadFile(filepath.Join(dir, CACertFile))
	if err != nil {
		return nil, fmt.Errorf("load CA: %w", err)
	}
	keyPEM, err := os.ReadFile(filepath.Join(dir, CAKeyFile))
	if err != nil {
		return nil, fmt.Errorf("load CA: %w", err)
	}
	cert, err := parseCertPEM(certPEM)
	if err != nil {
		return nil, fmt.Errorf("load CA %s: %w", filepath.Join(dir, CACertFile), err)
	}
	kb, _ := pem.Decode(keyPEM)
	if kb == nil {
		return nil, fmt.Errorf("load CA: %s holds no PEM key", filepath.Join(dir, CAKeyFile))
	}
	key, err := x509.ParseECPrivateKey(kb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("load CA key: %w", err)
	}
	return &CA{Cert: cert, Key: key, PEM: certPEM}, nil
}

// WriteFileAtomic writes data to name through a temporary file and a
// rename, so that a reader never sees half a key.
func WriteFileAtomic(name string, data []byte, perm os.FileMode) error {
	tmp := name + ".tmp"
	if err := os.WriteFile(tmp, data, perm); err != nil {
		return err
	}
	return os.Rename(tmp, name)
}

func parseCertPEM(b []byte) (*x509.Certificate, error) {
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != "CERTIFICATE" {
		return nil, errors.New("no PEM certificate")
	}
	return x509.ParseCertificate(blk.Bytes)
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return n
}
