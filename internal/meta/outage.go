package meta

import (
	"errors"
	"syscall"

	"tessera/internal/block"
)

// Errors of an unreachable meta service. Both unwrap to ErrIO, so a caller
// that does not look closer sees EIO as for any other failure; a caller
// that waits out outages (internal/meta/metawait) tells them apart:
//
//   - ErrUnreachable: the call never reached the service (the connection
//     could not be made, or broke before the call was sent), so it was not
//     applied and may be sent again whatever it does.
//   - ErrReplyLost: the call was sent and its connection broke, or its time
//     ran out, before the reply came: the service may have applied it.
//
// ErrMaybeApplied says more than ErrReplyLost, and is not Unavailable: the
// reply of a call was lost and the call may have been applied, and that
// can no longer be told (a commit whose blocks another client changed
// since). The caller must take it as maybe applied and must not redo it.
var (
	ErrUnreachable  = &outageError{"meta service unreachable"}
	ErrReplyLost    = &outageError{"meta service reply lost"}
	ErrMaybeApplied = &outageError{"meta service reply lost, and whether the call was applied cannot be told"}
)

type outageError struct{ msg string }

func (e *outageError) Error() string { return e.msg }

// Unwrap makes errors.Is(err, ErrIO) and errors.As(err, *syscall.Errno) hold.
func (e *outageError) Unwrap() error { return syscall.EIO }

// Unavailable reports whether err says the meta service could not be
// reached or did not answer (ErrUnreachable or ErrReplyLost), as opposed to
// an answer of the service.
func Unavailable(err error) bool {
	return errors.Is(err, ErrUnreachable) || errors.Is(err, ErrReplyLost)
}

// Installed reports whether current (a ConflictError's Current) holds the
// new content of every one of changes: a commit sent again that conflicts
// so was applied before, and nobody changed its blocks since.
func Installed(changes, current []BlockChange) bool {
	now := make(map[uint64]block.Hash, len(current))
	for _, c := range current {
		now[c.Index] = c.New
	}
	for _, ch := range changes {
		want := ch.New
		if ch.InlineNew {
			want = block.Sum(ch.NewInline)
		}
		if h, ok := now[ch.Index]; !ok || h != want {
			return false
		}
	}
	return len(changes) > 0
}
