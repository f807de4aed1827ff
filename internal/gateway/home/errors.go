package home

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
)

// The permanent error classes. They are syscall.Errno values: errors.Is
// tells them apart and the gateway hands them to FUSE unchanged.
var (
	ErrNotFound    = syscall.ENOENT
	ErrExist       = syscall.EEXIST
	ErrNotEmpty    = syscall.ENOTEMPTY
	ErrNotDir      = syscall.ENOTDIR
	ErrIsDir       = syscall.EISDIR
	ErrInvalidPath = syscall.EINVAL
	ErrUnsupported = syscall.ENOTSUP
	ErrPermission  = syscall.EACCES
)

// ErrUnavailable is the retryable class when there is no more precise
// cause: the home did not answer, or answered that it cannot now.
var ErrUnavailable = errors.New("home unavailable")

// Error is every error a Store returns: what was tried, on which path, the
// cause, and its class.
type Error struct {
	Op    string // "stat", "write", ...
	Path  string
	Err   error
	Retry bool
}

// Error formats as "home OP PATH: CAUSE".
func (e *Error) Error() string {
	r := ""
	if e.Retry {
		r = " (retryable)"
	}
	return fmt.Sprintf("home %s %q: %v%s", e.Op, e.Path, e.Err, r)
}

// Unwrap returns the cause, so that errors.Is sees ErrNotFound and the like.
func (e *Error) Unwrap() error { return e.Err }

// Retryable reports whether err is of the retryable class: the operation
// may succeed if tried again later. Errors from outside this package
// (nil included) are not.
func Retryable(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Retry
}

// permanentErrnos are the causes trying again will not change.
var permanentErrnos = map[syscall.Errno]bool{
	syscall.ENOENT: true, syscall.EEXIST: true, syscall.ENOTEMPTY: true,
	syscall.ENOTDIR: true, syscall.EISDIR: true, syscall.EINVAL: true,
	syscall.EPERM: true, syscall.EACCES: true, syscall.ENAMETOOLONG: true,
	syscall.ELOOP: true, syscall.EXDEV: true, syscall.ENOTSUP: true,
	syscall.EROFS: true, syscall.EFBIG: true, syscall.EBADF: true,
}

// wrap classifies err by its cause: a permanent errno is permanent, a
// network or context error or any other errno retryable. Other errors take
// retry (the implementation knows its library's errors best). nil stays nil.
func wrap(op, path string, err error, retry bool) error {
	if err == nil {
		return nil
	}
	var already *Error
	if errors.As(err, &already) {
		return err
	}
	var errno syscall.Errno
	var ne net.Error
	switch {
	case errors.As(err, &errno):
		return &Error{Op: op, Path: path, Err: err, Retry: !permanentErrnos[errno]}
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, os.ErrDeadlineExceeded), errors.As(err, &ne):
		return &Error{Op: op, Path: path, Err: err, Retry: true}
	}
	return &Error{Op: op, Path: path, Err: err, Retry: retry}
}

// permanent returns a permanent *Error of class class.
func permanent(op, path string, class error, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if msg == "" {
		return &Error{Op: op, Path: path, Err: class}
	}
	return &Error{Op: op, Path: path, Err: fmt.Errorf("%s: %w", msg, class)}
}
