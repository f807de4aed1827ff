package memcache

import (
	"errors"
	"fmt"
)

var (
	// ErrProtocol reports a reply the client does not understand. It comes
	// wrapped in a *ConnError: the connection is out of step and is closed.
	ErrProtocol = errors.New("memcache: malformed reply")
	// ErrTimeout reports a call that ran out of its own deadline (not ctx's).
	// It comes wrapped in a *ConnError.
	ErrTimeout = errors.New("memcache: timeout")
	// ErrServer reports a SERVER_ERROR line other than "object too large".
	ErrServer = errors.New("memcache: server error")
	// ErrClient reports an ERROR or CLIENT_ERROR line: the server did not
	// accept the request.
	ErrClient = errors.New("memcache: client error")
	// ErrTooLarge reports a value larger than the server (or
	// Options.MaxValue) accepts.
	ErrTooLarge = errors.New("memcache: value too large")
	// ErrNotStored reports a set the server did not perform.
	ErrNotStored = errors.New("memcache: not stored")
	// ErrBadKey reports a key memcached cannot hold: empty, longer than 250
	// bytes, or with a space or control character.
	ErrBadKey = errors.New("memcache: invalid key")
	// ErrClosed reports a call on a closed Client.
	ErrClosed = errors.New("memcache: client closed")
)

// ConnError reports a failure of the connection to a server: it could not be
// opened, broke, timed out, or carried a malformed reply. The server may be
// down; callers that track server health count it against the server.
type ConnError struct {
	Addr string // the server
	Op   string // "dial", "get", "set", …
	Err  error
}

func (e *ConnError) Error() string {
	return fmt.Sprintf("memcache %s %s: %v", e.Op, e.Addr, e.Err)
}

func (e *ConnError) Unwrap() error { return e.Err }

// IsConnError reports whether err is (or wraps) a *ConnError.
func IsConnError(err error) bool {
	var ce *ConnError
	return errors.As(err, &ce)
}

// replyError is an error line from a live server: the connection is still
// in step, but we close it anyway to be safe.
type replyError struct {
	kind error
	line string
}

func (e *replyError) Error() string { return fmt.Sprintf("%v: %q", e.kind, e.line) }
func (e *replyError) Unwrap() error { return e.kind }
