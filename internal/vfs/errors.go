package vfs

import (
	"fmt"
	"syscall"

	"tessera/internal/meta"
)

var (
	errNotDir  = syscall.ENOTDIR
	errNotLink = syscall.EINVAL
)

// errorf wraps errno with the operation and inode it failed on.
func errorf(op string, ino meta.Ino, errno syscall.Errno) error {
	return fmt.Errorf("%s inode %d: %w", op, ino, errno)
}

func isSymlink(a *meta.Attr) bool { return a.Mode&syscall.S_IFMT == syscall.S_IFLNK }

// checkName refuses a name no directory may hold: empty, ".", "..", with
// a slash or a NUL, or longer than meta.MaxNameLen. The meta service
// refuses them too; a front end that gets names from the network (NFS)
// sees the reason here, before any meta call.
func checkName(op, name string) error {
	switch {
	case name == "" || name == "." || name == "..":
		return fmt.Errorf("%s: name %q: %w", op, name, syscall.EINVAL)
	case len(name) > meta.MaxNameLen:
		return fmt.Errorf("%s: a name of %d bytes (at most %d): %w", op, len(name), meta.MaxNameLen, syscall.ENAMETOOLONG)
	}
	for i := 0; i < len(name); i++ {
		if name[i] == '/' || name[i] == 0 {
			return fmt.Errorf("%s: a name holds a slash or a NUL: %w", op, syscall.EINVAL)
		}
	}
	return nil
}
