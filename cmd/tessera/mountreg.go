package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// The mount registry lets admin commands given a path on a mount of
// `tessera up` find its data directory (and so its meta address and admin
// credentials) without --data: up records DATA under a name derived from
// the mount point in the system's temporary directory while it runs.

func mountRegFile(mount string) string {
	sum := sha256.Sum256([]byte(mount))
	return filepath.Join(os.TempDir(), "tessera-mounts-"+strconvUID(), hex.EncodeToString(sum[:12]))
}

func strconvUID() string { return fmt.Sprint(os.Getuid()) }

// registerMount records that mount is served by `tessera up --data data`;
// the returned func removes the record.
func registerMount(mount, data string) (func(), error) {
	abs, err := filepath.Abs(mount)
	if err != nil {
		return nil, err
	}
	absData, err := filepath.Abs(data)
	if err != nil {
		return nil, err
	}
	f := mountRegFile(abs)
	if err := os.MkdirAll(filepath.Dir(f), 0o700); err != nil {
		return nil, err
	}
	if err := os.WriteFile(f, []byte(absData+"\n"), 0o600); err != nil {
		return nil, err
	}
	return func() { os.Remove(f) }, nil
}

// mountPointOf returns the mount point path lies under: the last
// directory walking up from it whose device is path's.
func mountPointOf(path string) (string, error) {
	p, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	var st syscall.Stat_t
	if err := syscall.Stat(p, &st); err != nil {
		return "", &os.PathError{Op: "stat", Path: p, Err: err}
	}
	for p != "/" {
		parent := filepath.Dir(p)
		var ps syscall.Stat_t
		if err := syscall.Stat(parent, &ps); err != nil {
			return "", &os.PathError{Op: "stat", Path: parent, Err: err}
		}
		if ps.Dev != st.Dev {
			return p, nil
		}
		p = parent
	}
	return p, nil
}

// dataDirOf returns the data directory of the `tessera up` serving the
// mount path lies on.
func dataDirOf(path string) (string, error) {
	mp, err := mountPointOf(path)
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile(mountRegFile(mp))
	if errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("%w: %s is not served by a running `tessera up` of this user; give --data DIR or --meta ADDR", errUsage, mp)
	}
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}
