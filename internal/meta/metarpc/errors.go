package metarpc

import (
	"errors"
	"fmt"
	"syscall"
	"unicode/utf8"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"tessera/internal/auth"
	"tessera/internal/meta"
	pb "tessera/internal/meta/metarpc/metapb"
)

// An error of the API crosses the wire as a gRPC status carrying a pb.Error
// detail (the errno, the message, corruption, a commit conflict). A status
// without that detail was made by the transport or an interceptor: the
// client classifies it by its code (call, in client.go).

// codeOf is the status code an API error travels with; clients read the
// detail, the code is for logs and foreign tools.
func codeOf(err error) codes.Code {
	switch {
	case errors.Is(err, auth.ErrDenied):
		return codes.PermissionDenied
	case errors.Is(err, auth.ErrUnauthenticated):
		return codes.Unauthenticated
	case errors.Is(err, meta.ErrConflict):
		return codes.Aborted
	case errors.Is(err, meta.ErrNotFound):
		return codes.NotFound
	case errors.Is(err, meta.ErrExist):
		return codes.AlreadyExists
	case errors.Is(err, meta.ErrInvalid):
		return codes.InvalidArgument
	case errors.Is(err, meta.ErrSessionExpired):
		return codes.FailedPrecondition
	}
	return codes.Unknown
}

// statusOf encodes an API error for the wire; nil stays nil.
func statusOf(err error) error {
	if err == nil {
		return nil
	}
	msg := capMessage(err.Error())
	d := &pb.Error{Errno: int32(syscall.EIO), Message: msg, Corrupt: errors.Is(err, meta.ErrCorrupt)}
	var ce *meta.ConflictError
	var errno syscall.Errno
	switch {
	case errors.As(err, &ce):
		d.Conflict = &pb.Conflict{Ino: uint64(ce.Ino), Current: changesOut(ce.Current)}
	case errors.Is(err, auth.ErrDenied):
		d.Errno = int32(syscall.EACCES)
	case errors.As(err, &errno) && errno != 0:
		d.Errno = int32(errno)
	}
	st, derr := status.New(codeOf(err), msg).WithDetails(d)
	if derr != nil {
		return status.Error(codes.Internal, msg)
	}
	return st.Err()
}

// MaxWireError bounds the message of an error sent to a caller (twice on
// the wire: the status's and the detail's): whatever an error quotes of a
// request, its reply stays small.
const MaxWireError = 1 << 10

// capMessage cuts msg to MaxWireError bytes at a character boundary,
// saying how long it was.
func capMessage(msg string) string {
	if len(msg) <= MaxWireError {
		return msg
	}
	tail := fmt.Sprintf("…(%d bytes)", len(msg))
	cut := MaxWireError - len(tail)
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return msg[:cut] + tail
}

// apiError returns the API error a status carries, and false when it
// carries none (a transport or interceptor error).
func apiError(st *status.Status) (error, bool) {
	for _, x := range st.Details() {
		d, ok := x.(*pb.Error)
		if !ok {
			continue
		}
		if d.Conflict != nil {
			cur, err := changesIn(d.Conflict.Current)
			if err != nil {
				return fmt.Errorf("meta server sent a malformed conflict: %w", err), true
			}
			return &meta.ConflictError{Ino: meta.Ino(d.Conflict.Ino), Current: cur}, true
		}
		e := &RemoteError{Errno: syscall.Errno(d.Errno), Msg: d.Message, corrupt: d.Corrupt}
		if e.Errno <= 0 || e.Errno > 4095 {
			e.Errno = syscall.EIO
		}
		if st.Code() == codes.PermissionDenied {
			e.extra = auth.ErrDenied
		}
		return e, true
	}
	return nil, false
}

// RemoteError is an error the meta server returned: its message, and the
// errno it unwraps to (meta.ErrIO for errors that had none; EACCES and
// auth.ErrDenied for a refused call).
type RemoteError struct {
	Errno   syscall.Errno
	Msg     string
	corrupt bool
	extra   error // a class besides the errno: auth.ErrDenied
}

// Error returns the server's message.
func (e *RemoteError) Error() string { return "meta server: " + e.Msg }

// Unwrap returns the errno, and meta.ErrCorrupt or auth.ErrDenied when the
// server's error was one.
func (e *RemoteError) Unwrap() []error {
	errs := []error{e.Errno}
	if e.corrupt {
		errs = append(errs, meta.ErrCorrupt)
	}
	if e.extra != nil {
		errs = append(errs, e.extra)
	}
	return errs
}
