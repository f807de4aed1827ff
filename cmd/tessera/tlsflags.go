package main

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"tessera/internal/auth"
	"tessera/internal/meta/metarpc"
	"tessera/internal/up"
)

// tlsFlags are the security flags of every role and admin command, in
// this one place: a process's certificate, key and CA (mutual TLS), or
// --insecure (plain TCP, loopback only); admin commands also take a token.
type tlsFlags struct {
	cert, key, ca, token *string
	insecure             *bool
}

func addTLSFlags(fs *flag.FlagSet) *tlsFlags {
	return &tlsFlags{
		cert:     fs.String("tls-cert", "", "this process's certificate `FILE` (PEM; tessera certs issue NAME --role ROLE makes one)"),
		key:      fs.String("tls-key", "", "the certificate's key `FILE` (PEM)"),
		ca:       fs.String("tls-ca", "", "the cluster CA's certificate `FILE` (the ca.crt that tessera certs init makes)"),
		insecure: fs.Bool("insecure", false, "plain TCP without authentication: every caller is trusted as an admin; only on loopback addresses"),
	}
}

// addAdminTLSFlags is addTLSFlags and --token, for the admin commands.
func addAdminTLSFlags(fs *flag.FlagSet) *tlsFlags {
	f := addTLSFlags(fs)
	f.token = fs.String("token", "", "authenticate with a `TOKEN` (from tessera certs token NAME --role admin) instead of a certificate; needs --tls-ca (or --data DIR of a tessera up)")
	return f
}

func (f *tlsFlags) anyTLS() bool { return *f.cert != "" || *f.key != "" || *f.ca != "" }

// role returns the credentials of role command cmd, whose certificate must
// name one of roles, listening on listen (none for a mount): nil with
// --insecure, which only a loopback address may use. Without TLS flags the
// process uses this machine's own CA (up.EnsureMachineCert), with a
// certificate called name for roles[0]; a block server's name is its id,
// which the meta service binds it to, so it needs --id then.
func (f *tlsFlags) role(cmd, name string, roles []auth.Role, listen ...string) (*auth.Credentials, error) {
	if *f.insecure {
		if f.anyTLS() {
			return nil, fmt.Errorf("%w: give --insecure or --tls-cert/--tls-key/--tls-ca, not both", errUsage)
		}
		for _, l := range listen {
			if err := loopbackOnly(l); err != nil {
				return nil, err
			}
		}
		return nil, nil
	}
	if !f.anyTLS() {
		if name == "" {
			return nil, fmt.Errorf("%w: without --tls-cert/--tls-key/--tls-ca, tessera %s takes a certificate of this machine's CA "+
				"issued for its id: give --id (or the --tls-* flags, or --insecure on a loopback address)", errUsage, cmd)
		}
		c, dir, err := up.EnsureMachineCert(name, roles[0])
		if err != nil {
			return nil, fmt.Errorf("tessera %s without --tls-cert/--tls-key/--tls-ca: %w", cmd, err)
		}
		fmt.Fprintf(os.Stderr, "tessera %s: TLS with this machine's CA (%s, certificate %q): roles on this machine need no flags; "+
			"for several machines make a cluster CA with `tessera certs`\n", cmd, dir, name)
		return c, nil
	}
	c, err := auth.LoadCredentials(*f.cert, *f.key, *f.ca)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(roles, c.Identity.Role) {
		return nil, fmt.Errorf("certificate %s is issued for %s; `tessera %s` needs one for role %s", *f.cert, c.Identity, cmd, joinRoles(roles))
	}
	return c, nil
}

// admin returns the credentials of an admin command: the certificate of
// the flags, or a token with the CA's certificate, or, given --data DIR
// of a `tessera up`, the admin certificate it made in DIR/tls/; nil with
// --insecure.
func (f *tlsFlags) admin(cmd, dataDir string) (*auth.Credentials, error) {
	token := ""
	if f.token != nil {
		token = *f.token
	}
	switch {
	case *f.insecure:
		if f.anyTLS() || token != "" {
			return nil, fmt.Errorf("%w: give --insecure or credentials (--tls-*, --token), not both", errUsage)
		}
		return nil, nil
	case token != "":
		if *f.cert != "" || *f.key != "" {
			return nil, fmt.Errorf("%w: give --token or --tls-cert/--tls-key, not both", errUsage)
		}
		ca := *f.ca
		if ca == "" && dataDir != "" {
			ca = filepath.Join(up.TLSDir(dataDir), auth.CACertFile)
		}
		if ca == "" {
			return nil, fmt.Errorf("%w: --token needs the CA's certificate: --tls-ca FILE", errUsage)
		}
		return auth.LoadCAOnly(ca, token)
	case f.anyTLS():
		return auth.LoadCredentials(*f.cert, *f.key, *f.ca)
	case dataDir != "":
		c, err := up.LoadLocalAdmin(dataDir)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s holds no admin certificate (%s): was `tessera up --data %s` started with --insecure? Then give --insecure here too",
				errUsage, dataDir, up.TLSDir(dataDir), dataDir)
		}
		return c, err
	default:
		return nil, fmt.Errorf("%w: give --tls-cert/--tls-key/--tls-ca of an admin certificate, or --token TOKEN --tls-ca FILE, "+
			"or --data DIR of a `tessera up`, or --insecure for a cluster run without TLS (see tessera %s -h)", errUsage, cmd)
	}
}

// loopbackOnly refuses a listen address that is not on loopback: without
// TLS a port must not be reachable from other machines.
func loopbackOnly(listen string) error {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return fmt.Errorf("%w: listen address %q: %v", errUsage, listen, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("%w: --insecure refuses to listen on %s, which is not a loopback address: "+
		"anyone reaching it could read, write and remove every file; give --tls-cert/--tls-key/--tls-ca, or listen on 127.0.0.1", errUsage, listen)
}

func joinRoles(roles []auth.Role) string {
	s := make([]string, len(roles))
	for i, r := range roles {
		s[i] = string(r)
	}
	return strings.Join(s, " or ")
}

// metaDialOptions are the meta RPC's dial options for a process's
// credentials (nil: plain TCP, --insecure); a person's token travels with
// every call.
func metaDialOptions(creds *auth.Credentials) metarpc.DialOptions {
	if creds == nil {
		return metarpc.DialOptions{}
	}
	return metarpc.DialOptions{Creds: creds, Token: creds.Token}
}
