package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"tessera/internal/auth"
)

// defaultCADir is where `tessera certs` keeps the CA unless --dir says.
const defaultCADir = "tessera-ca"

// runCerts is `tessera certs init|issue NAME|token NAME`: a cluster CA and
// its certificates and tokens, for people without a PKI.
func runCerts(ctx context.Context, args []string) error {
	return certsCommand(args, os.Stdout, time.Now())
}

func certsCommand(args []string, out io.Writer, now time.Time) error {
	fs := flag.NewFlagSet("certs", flag.ContinueOnError)
	dir := fs.String("dir", defaultCADir, "the CA's directory: ca.crt, ca.key, and NAME.crt/NAME.key of issued certificates")
	role := fs.String("role", "", "issue, token: the holder's role: "+joinRoles(auth.Roles))
	root := fs.String("root", "", "issue, token: confine the holder to this subtree (/proj)")
	hosts := fs.String("host", "", "issue: comma-separated DNS names and IP addresses the holder listens on "+
		"(default for meta and blockd: this host's name, localhost, 127.0.0.1, ::1)")
	ttl := fs.Duration("ttl", 0, "validity: init 87600h (10 years), issue 8760h, token 24h")
	force := fs.Bool("force", false, "init, issue: replace existing files")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return fmt.Errorf("%w: want init, issue NAME --role ROLE or token NAME --role ROLE (see tessera certs -h)", errUsage)
	}
	if *ttl < 0 {
		return fmt.Errorf("%w: --ttl %v must be positive", errUsage, *ttl)
	}
	validity := func(def time.Duration) time.Duration {
		if *ttl == 0 {
			return def
		}
		return *ttl
	}
	switch op := pos[0]; op {
	case "init":
		if len(pos) != 1 {
			return fmt.Errorf("%w: certs init takes no argument, got %q", errUsage, pos[1])
		}
		return certsInit(out, *dir, validity(10*365*24*time.Hour), *force)
	case "issue", "token":
		if len(pos) != 2 {
			return fmt.Errorf("%w: want certs %s NAME --role ROLE", errUsage, op)
		}
		name := pos[1]
		if err := checkCertName(name); err != nil {
			return err
		}
		if *role == "" {
			return fmt.Errorf("%w: certs %s %s: --role is required (%s)", errUsage, op, name, joinRoles(auth.Roles))
		}
		r, err := auth.ParseRole(*role)
		if err != nil {
			return fmt.Errorf("%w: --role: %v", errUsage, err)
		}
		ca, err := loadCA(*dir)
		if err != nil {
			return err
		}
		if op == "token" {
			tok, err := ca.Token(auth.TokenRequest{Name: name, Role: r, Root: *root, Validity: validity(24 * time.Hour)}, now)
			if err != nil {
				return err
			}
			fmt.Fprintln(out, tok)
			return nil
		}
		return certsIssue(out, ca, *dir, auth.Request{Name: name, Role: r, Root: *root, Hosts: splitHosts(*hosts, r),
			Validity: validity(365 * 24 * time.Hour)}, *force)
	default:
		return fmt.Errorf("%w: unknown certs command %q: want init, issue or token", errUsage, op)
	}
}

func certsInit(out io.Writer, dir string, validity time.Duration, force bool) error {
	if _, err := os.Stat(filepath.Join(dir, auth.CAKeyFile)); err == nil && !force {
		return fmt.Errorf("%s already holds a CA (%s): --force replaces it, and every certificate it issued stops being trusted",
			dir, auth.CAKeyFile)
	}
	ca, err := auth.NewCA("tessera cluster CA", validity)
	if err != nil {
		return err
	}
	if err := ca.Save(dir); err != nil {
		return fmt.Errorf("save the CA in %s: %w", dir, err)
	}
	fmt.Fprintf(out, "tessera certs: CA written to %s (keep %s secret; give %s to every process as --tls-ca)\n",
		dir, auth.CAKeyFile, filepath.Join(dir, auth.CACertFile))
	return nil
}

func certsIssue(out io.Writer, ca *auth.CA, dir string, req auth.Request, force bool) error {
	certFile, keyFile := auth.CertFiles(dir, req.Name)
	for _, f := range []string{certFile, keyFile} {
		if _, err := os.Stat(f); err == nil && !force {
			return fmt.Errorf("%s exists: --force replaces it", f)
		}
	}
	cp, kp, err := ca.Issue(req)
	if err != nil {
		return err
	}
	if err := auth.WriteFileAtomic(keyFile, kp, 0o600); err != nil {
		return err
	}
	if err := auth.WriteFileAtomic(certFile, cp, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(out, "tessera certs: %s (%s) written: --tls-cert %s --tls-key %s --tls-ca %s\n",
		req.Name, req.Role, certFile, keyFile, filepath.Join(dir, auth.CACertFile))
	return nil
}

// loadCA loads the CA of dir, saying what to do when there is none.
func loadCA(dir string) (*auth.CA, error) {
	ca, err := auth.LoadCA(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no CA in %s: make one with `tessera certs init --dir %s` (or give --dir)", dir, dir)
	}
	return ca, err
}

// checkCertName refuses names that are not plain file names, and the CA's.
func checkCertName(name string) error {
	if name == "" || name == "ca" || strings.ContainsAny(name, "/\\|") || strings.HasPrefix(name, ".") {
		return fmt.Errorf("%w: certificate name %q: want a plain name such as blockd1 or alice (not \"ca\", no '/', '|' or leading '.')", errUsage, name)
	}
	return nil
}

// splitHosts parses --host; server roles default to this host's names.
func splitHosts(s string, r auth.Role) []string {
	if s == "" {
		if r != auth.RoleMeta && r != auth.RoleBlockd {
			return nil
		}
		hosts := []string{"localhost", "127.0.0.1", "::1"}
		if h, err := os.Hostname(); err == nil && h != "" {
			hosts = append(hosts, h)
		}
		return hosts
	}
	var out []string
	for _, h := range strings.Split(s, ",") {
		if h = strings.TrimSpace(h); h != "" {
			out = append(out, h)
		}
	}
	return out
}
