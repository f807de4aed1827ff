package metarpc

import (
	"errors"
	"syscall"

	"tessera/internal/block"
	"tessera/internal/meta"
)

// Args is the request envelope of every call; each method reads the fields
// its meta.API counterpart takes.
type Args struct {
	Timeout int64 // nanoseconds the caller still waits; 0: no deadline
	// Session is the session the call is made for (meta.SessionBinder);
	// 0 for none.
	Session meta.SessionID
	Ack     uint64 // Callbacks: acknowledged up to this Seq
	Wait    int64  // Callbacks: nanoseconds to wait for a callback

	Ino, Parent, NewParent meta.Ino
	Name, NewName, After   string
	Flags                  uint32
	Limit                  int
	Plus                   bool
	First, Count           uint64
	Value                  []byte
	SetAttr                meta.SetAttrReq
	Create                 meta.CreateReq
	Commit                 meta.CommitReq
	Server                 meta.Server
	Hash                   block.Hash
}

// Reply is the response envelope of every call.
type Reply struct {
	Err       *WireError
	Inode     meta.Inode
	Ents      []meta.DirEntry
	More      bool
	Recipe    meta.Recipe
	Value     []byte
	Names     []string
	StatFS    meta.StatFS
	Map       meta.ServerMap
	Refs      []meta.BlockRef
	Progress  meta.MoverProgress
	Session   meta.SessionInfo
	Callbacks []meta.Callback
}

// WireError is an error as it crosses the wire.
type WireError struct {
	Errno    int32  // a syscall.Errno; EIO for errors that carry none
	Msg      string // the server's message
	Corrupt  bool   // the error was meta.ErrCorrupt
	Conflict bool   // a *meta.ConflictError: Ino and Current are set
	Ino      meta.Ino
	Current  []meta.BlockChange
}

// encodeError classifies a server-side error for the wire.
func encodeError(err error) *WireError {
	if err == nil {
		return nil
	}
	w := &WireError{Errno: int32(syscall.EIO), Msg: err.Error(), Corrupt: errors.Is(err, meta.ErrCorrupt)}
	var ce *meta.ConflictError
	if errors.As(err, &ce) {
		w.Conflict, w.Ino, w.Current = true, ce.Ino, ce.Current
		return w
	}
	var errno syscall.Errno
	if errors.As(err, &errno) && errno != 0 {
		w.Errno = int32(errno)
	}
	return w
}

// decode rebuilds the error a WireError describes.
func (w *WireError) decode() error {
	if w == nil {
		return nil
	}
	if w.Conflict {
		return &meta.ConflictError{Ino: w.Ino, Current: w.Current}
	}
	e := &RemoteError{Errno: syscall.Errno(w.Errno), Msg: w.Msg, corrupt: w.Corrupt}
	if e.Errno == 0 {
		e.Errno = syscall.EIO
	}
	return e
}

// RemoteError is an error the meta server returned: its message, and the
// errno it unwraps to (meta.ErrIO for errors that had none).
type RemoteError struct {
	Errno   syscall.Errno
	Msg     string
	corrupt bool
}

// Error returns the server's message.
func (e *RemoteError) Error() string { return "meta server: " + e.Msg }

// Unwrap returns the errno (and meta.ErrCorrupt for corruption).
func (e *RemoteError) Unwrap() []error {
	if e.corrupt {
		return []error{e.Errno, meta.ErrCorrupt}
	}
	return []error{e.Errno}
}
