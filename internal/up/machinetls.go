package up

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"tessera/internal/auth"
)

// MachineTLSEnv names the environment variable that overrides
// MachineTLSDir.
const MachineTLSEnv = "TESSERA_TLS_DIR"

// MachineTLSDir is where roles started without TLS flags keep this
// machine's own CA and their certificates: $TESSERA_TLS_DIR, else
// /var/lib/tessera/tls for root, else ~/.local/share/tessera/tls. Only
// processes that can read it (its owner: the CA key is 0600 in a 0700
// directory) get certificates of that CA, so the roles of one machine
// authenticate each other with no setup, and nothing from another machine
// can connect without a certificate copied from it. A cluster over several
// machines uses `tessera certs` and the --tls-* flags instead.
func MachineTLSDir() (string, error) {
	if d := os.Getenv(MachineTLSEnv); d != "" {
		return d, nil
	}
	if os.Geteuid() == 0 {
		return "/var/lib/tessera/tls", nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no directory for this machine's CA (set %s): %w", MachineTLSEnv, err)
	}
	return filepath.Join(home, ".local", "share", "tessera", "tls"), nil
}

// EnsureMachineCert returns the credentials of certificate name (of role)
// from this machine's CA in MachineTLSDir, making the CA on first use and
// the certificate when missing, of another role, or no longer valid. Makers
// on the machine take turns through a lock file in the directory, so that
// two roles starting at once make one CA.
func EnsureMachineCert(name string, role auth.Role) (*auth.Credentials, string, error) {
	dir, err := MachineTLSDir()
	if err != nil {
		return nil, "", err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, dir, fmt.Errorf("this machine's CA: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, dir, fmt.Errorf("this machine's CA: %w", err)
	}
	defer lock.Close() // drops the flock
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return nil, dir, fmt.Errorf("this machine's CA: lock %s: %w", lock.Name(), err)
	}
	ca, err := auth.LoadCA(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if _, serr := os.Stat(filepath.Join(dir, auth.CACertFile)); serr == nil {
			return nil, dir, fmt.Errorf("%s exists without its key: remove %s to make a new CA for this machine", filepath.Join(dir, auth.CACertFile), dir)
		}
		host, _ := os.Hostname()
		if ca, err = auth.NewCA("tessera machine CA "+host, localValidity); err == nil {
			err = ca.Save(dir)
		}
	}
	if err != nil {
		return nil, dir, fmt.Errorf("this machine's CA in %s: %w", dir, err)
	}
	host, _ := os.Hostname()
	c, err := ensureCert(ca, dir, name, role, []string{"127.0.0.1", "::1", "localhost", host})
	return c, dir, err
}
