package up

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"tessera/internal/auth"
)

// TLSDir is where `tessera up --data DIR` keeps its cluster CA and the
// certificates of its processes: DIR/tls/ca.{crt,key}, meta, b0…bN-1,
// mount and admin (.crt and .key each). Admin commands given --data DIR
// use DIR/tls/admin.*.
func TLSDir(dataDir string) string { return filepath.Join(dataDir, "tls") }

// Names of the certificates in TLSDir.
const (
	MetaCertName  = "meta"
	MountCertName = "mount"
	AdminCertName = "admin"
)

// localValidity is how long the CA and certificates of `tessera up` are
// valid: they never leave the machine, and an expiry would stop a cluster
// that nobody configured.
const localValidity = 10 * 365 * 24 * time.Hour

// LocalTLS are the credentials of the processes of one `tessera up`.
type LocalTLS struct {
	Meta, Mount, Admin *auth.Credentials
	Blocks             []*auth.Credentials // block server i's
}

// EnsureLocalTLS loads the CA and certificates in TLSDir(dataDir), making
// what is missing: the CA on first start, a certificate for each role (and
// for block servers added since). hosts are the names and addresses the
// certificates are valid for, besides 127.0.0.1, ::1 and localhost.
func EnsureLocalTLS(dataDir string, blockServers int, hosts ...string) (*LocalTLS, error) {
	dir := TLSDir(dataDir)
	ca, err := auth.LoadCA(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if _, serr := os.Stat(filepath.Join(dir, auth.CACertFile)); serr == nil {
			return nil, fmt.Errorf("%s exists without its key %s: remove %s to make a new CA (and new certificates)", filepath.Join(dir, auth.CACertFile), auth.CAKeyFile, dir)
		}
		if ca, err = auth.NewCA("tessera up "+dataDir, localValidity); err == nil {
			err = ca.Save(dir)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("the CA of %s: %w", dataDir, err)
	}
	hosts = append([]string{"127.0.0.1", "::1", "localhost"}, hosts...)
	load := func(name string, role auth.Role) (*auth.Credentials, error) {
		return ensureCert(ca, dir, name, role, hosts)
	}
	t := &LocalTLS{}
	if t.Meta, err = load(MetaCertName, auth.RoleMeta); err != nil {
		return nil, err
	}
	if t.Mount, err = load(MountCertName, auth.RoleClientRW); err != nil {
		return nil, err
	}
	if t.Admin, err = load(AdminCertName, auth.RoleAdmin); err != nil {
		return nil, err
	}
	for i := range blockServers {
		c, err := load("b"+strconv.Itoa(i), auth.RoleBlockd)
		if err != nil {
			return nil, err
		}
		t.Blocks = append(t.Blocks, c)
	}
	return t, nil
}

// ensureCert loads name's certificate from dir, issuing it first if it is
// missing or no longer verifies against ca (expired, or of an older CA).
func ensureCert(ca *auth.CA, dir, name string, role auth.Role, hosts []string) (*auth.Credentials, error) {
	certFile, keyFile := auth.CertFiles(dir, name)
	if c, err := loadWithCA(certFile, keyFile, ca); err == nil && c.Identity.Role == role {
		return c, nil
	}
	cp, kp, err := ca.Issue(auth.Request{Name: name, Role: role, Hosts: hosts, Validity: localValidity})
	if err != nil {
		return nil, err
	}
	if err := auth.WriteFileAtomic(keyFile, kp, 0o600); err != nil {
		return nil, fmt.Errorf("write %s: %w", keyFile, err)
	}
	if err := auth.WriteFileAtomic(certFile, cp, 0o644); err != nil {
		return nil, fmt.Errorf("write %s: %w", certFile, err)
	}
	return loadWithCA(certFile, keyFile, ca)
}

func loadWithCA(certFile, keyFile string, ca *auth.CA) (*auth.Credentials, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, err
	}
	return auth.NewCredentials(cert, ca.PEM)
}

// LoadLocalAdmin returns the admin credentials `tessera up --data DIR`
// made, for the admin commands given --data DIR; an error wrapping
// fs.ErrNotExist when there are none (a cluster run with --insecure).
func LoadLocalAdmin(dataDir string) (*auth.Credentials, error) {
	dir := TLSDir(dataDir)
	cert, key := auth.CertFiles(dir, AdminCertName)
	return auth.LoadCredentials(cert, key, filepath.Join(dir, auth.CACertFile))
}
