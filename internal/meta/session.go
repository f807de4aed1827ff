package meta

import (
	"fmt"
	"syscall"
	"time"
)

// SessionID names a client session; 0 is no session.
type SessionID uint64

// SessionInfo describes a session OpenSession started: it expires TTL after
// its latest Callbacks poll.
type SessionInfo struct {
	ID  SessionID
	TTL time.Duration
}

// CallbackKind says what a Callback asks of its receiver.
type CallbackKind uint8

// Callback kinds (CAPFS 3.5): an invalidation when several other sessions
// hold a lease on the inode, an update when exactly one does.
const (
	// CallbackInvalidate: drop the cached attributes and recipe of Ino.
	// The receiver's lease on Ino ends; it gains a new one on its next read.
	CallbackInvalidate CallbackKind = iota + 1
	// CallbackUpdate: Inode is the inode after the change and Changes the
	// recipe entries it changed; the receiver keeps its lease.
	CallbackUpdate
)

// String names the kind.
func (k CallbackKind) String() string {
	switch k {
	case CallbackInvalidate:
		return "invalidate"
	case CallbackUpdate:
		return "update"
	}
	return fmt.Sprintf("callback(%d)", uint8(k))
}

// Callback tells a session that an inode it holds a lease on changed.
type Callback struct {
	Seq  uint64 // per session, increasing from 1
	Ino  Ino
	Kind CallbackKind
	// Inode (CallbackUpdate) is the inode after the change: attributes,
	// size, change counter and inline block 0.
	Inode Inode
	// Changes (CallbackUpdate) are the changed recipe entries: Index and
	// New (zero = hole); InlineNew marks block 0 becoming inline (its bytes
	// are in Inode). Empty for attribute-only changes.
	Changes []BlockChange
	// SetSize (CallbackUpdate): the size was set exactly (a truncate), so
	// entries at or past ceil(Size/BlockSize) are gone.
	SetSize bool
}

// ErrSessionExpired is returned for an unknown or expired session (the meta
// service restarted, or the client did not poll within the TTL). The client
// drops every cache the session covered and opens a new session.
var ErrSessionExpired = syscall.ESTALE

// SessionBinder is implemented by APIs that can make calls on behalf of a
// session. A bound API grants the session a lease on the inodes that
// Lookup, GetAttr, GetRecipe, Create, Commit and SetAttr return, and the
// changes made through it are not called back to that session. APIs without
// it serve calls without leases: their callers cannot cache coherently.
type SessionBinder interface {
	WithSession(id SessionID) API
}

// Defaults of Options.SessionTTL and Options.MaxLeases.
const (
	DefaultSessionTTL = 5 * time.Second
	DefaultMaxLeases  = 1 << 16
)

// maxUpdateChanges is the most block changes an update callback carries; a
// larger commit is called back as an invalidation.
const maxUpdateChanges = 4096
