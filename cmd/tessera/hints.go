package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strings"

	"tessera/internal/up"
)

// nextStep returns what to do about err, a command's failure, for the
// failures of a newcomer's first hour ("" when the error says it already,
// or is not one of them). main prints it under the error.
func nextStep(err error) string {
	var mp *up.MountPointError
	msg := err.Error()
	switch {
	case errors.As(err, &mp) && errors.Is(err, up.ErrMountBusy):
		return fmt.Sprintf("unmount it first (umount %s as root, fusermount3 -u %s otherwise), or give another mount point; "+
			"if it is a tessera up still running, stop that one (Ctrl-C, or kill the PID in its DATA/tessera.lock)", shq(mp.Dir), shq(mp.Dir))
	case errors.As(err, &mp) && errors.Is(err, fs.ErrNotExist):
		return fmt.Sprintf("make it first: mkdir -p %s", shq(mp.Dir))
	case errors.Is(err, exec.ErrNotFound) && strings.Contains(msg, "fusermount"):
		return "FUSE's mount helper (fusermount3) is missing: install the fuse3 package (scripts/deps.sh does), or run as root"
	case strings.Contains(msg, "fusermount exited") && os.Geteuid() != 0:
		return "fusermount3 refused the mount (its reason is on the line above). As a user other than root, a Tessera mount " +
			"needs the line user_allow_other in /etc/fuse.conf (as root: echo user_allow_other >> /etc/fuse.conf) " +
			"and a mount point you own; or run it as root"
	case isMountFailure(msg) && noDevFuse():
		return "this machine has no /dev/fuse: load the module (modprobe fuse as root); in a container, " +
			"give it the device (docker run --device /dev/fuse --cap-add SYS_ADMIN)"
	}
	return ""
}

// isMountFailure reports whether msg is the FUSE mount's failure
// (internal/fuse.Mount says "mount DIR: …").
func isMountFailure(msg string) bool { return strings.HasPrefix(msg, "mount ") }

// noDevFuse reports whether /dev/fuse is missing.
var noDevFuse = func() bool {
	_, err := os.Stat("/dev/fuse")
	return errors.Is(err, fs.ErrNotExist)
}

// shq quotes s for a shell when it needs it.
func shq(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '/' || r == '.' || r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
