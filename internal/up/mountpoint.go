package up

import (
	"errors"
	"fmt"
)

// ErrMountBusy is wrapped by the MountPointError of a mount point where
// something is mounted and answering.
var ErrMountBusy = errors.New("something is already mounted there")

// MountPointError is a mount point that cannot be used: Err is
// ErrMountBusy, or wraps why Dir is not a directory (fs.ErrNotExist when it
// does not exist). The command line says what to do next from it.
type MountPointError struct {
	Dir string
	Err error
}

func (e *MountPointError) Error() string { return fmt.Sprintf("mount point %s: %v", e.Dir, e.Err) }

func (e *MountPointError) Unwrap() error { return e.Err }

// notDir is "not a directory (why)"; Err is nil when Dir exists but is not
// a directory.
type notDir struct{ Err error }

func (e notDir) Error() string { return fmt.Sprintf("not a directory (%v)", e.Err) }

func (e notDir) Unwrap() error { return e.Err }
