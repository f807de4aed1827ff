package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// PKI is the CA and certificates of a Multi cluster, made with `tessera
// certs` as an operator would: TLS is the default, so every process of the
// cluster gets a certificate of its role (meta, b<i> as blockd, mount as
// client-rw, admin for the admin commands), valid for 127.0.0.1.
type PKI struct {
	bin, dir string
}

// newPKI runs `tessera certs init` in dir and issues the certificates of
// meta, mount and admin.
func newPKI(bin, dir string) (*PKI, error) {
	p := &PKI{bin: bin, dir: dir}
	if err := p.certs("init"); err != nil {
		return nil, err
	}
	for name, role := range map[string]string{"meta": "meta", "mount": "client-rw", "admin": "admin"} {
		if err := p.Issue(name, role); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// Dir is the CA's directory (ca.crt, NAME.crt, NAME.key).
func (p *PKI) Dir() string { return p.dir }

// Issue runs `tessera certs issue NAME --role ROLE --host 127.0.0.1` with
// extra args, unless NAME's certificate exists.
func (p *PKI) Issue(name, role string, args ...string) error {
	if _, err := os.Stat(filepath.Join(p.dir, name+".crt")); err == nil {
		return nil
	}
	return p.certs(append([]string{"issue", name, "--role", role, "--host", "127.0.0.1"}, args...)...)
}

// Args returns the flags that make a process use NAME's certificate.
func (p *PKI) Args(name string) []string {
	return []string{"--tls-cert", filepath.Join(p.dir, name+".crt"), "--tls-key", filepath.Join(p.dir, name+".key"),
		"--tls-ca", filepath.Join(p.dir, "ca.crt")}
}

func (p *PKI) certs(args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := RunBin(ctx, p.bin, append(append([]string{"certs"}, args...), "--dir", p.dir)...)
	if err == nil && res.ExitCode != 0 {
		err = fmt.Errorf("tessera certs %v: exit %d: %s", args, res.ExitCode, res.Stderr)
	}
	return err
}
