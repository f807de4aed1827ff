package auth

import "errors"

// The classes of authentication and authorization errors.
var (
	// ErrUnauthenticated: the caller presented no credentials, or ones
	// that do not verify (wrong CA, expired, malformed, unknown token).
	ErrUnauthenticated = errors.New("unauthenticated")
	// ErrDenied: the caller is known but its role or root does not allow
	// the request.
	ErrDenied = errors.New("permission denied")
)
