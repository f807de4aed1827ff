package policy

import (
	"context"
	"fmt"
	"syscall"
)

// ErrImmutable is returned (wrapped with the file's inode) for a change to
// the committed content of a write-once file; it is an EPERM.
var ErrImmutable = fmt.Errorf("write-once file already committed: %w", syscall.EPERM)

// File is the client's view of an open file that hooks may act on.
type File interface {
	// Ino is the file's inode number.
	Ino() uint64
	// Size is the file's size as this handle sees it.
	Size() int64
	// Committed reports whether the file had committed content before this
	// handle's writes (Change > 1 or Size > 0 when it was opened).
	Committed() bool
	// Dirty is the number of this handle's writes not yet committed.
	Dirty() int
	// Commit uploads what is buffered and commits it, optimistically or
	// forced as the Knobs say.
	Commit(ctx context.Context) error
	// Revalidate fetches attributes and recipe from meta now, dropping
	// cached ones that are stale.
	Revalidate(ctx context.Context) error
}

// Op is the operation a hook is called around: the open flags of the handle
// (O_SYNC, O_DSYNC, O_RSYNC...) and the byte range (zero for open, sync and
// close).
type Op struct {
	Flags    int
	Off, Len int64
}

// Hooks are called by the client before (Pre) and after (Post) it serves
// each operation on a handle (CAPFS Figure 6). An error from a Pre hook is
// returned instead of serving the operation; an error from a Post hook is
// returned although the operation was served.
type Hooks interface {
	PreOpen(ctx context.Context, f File, op Op) error
	PostOpen(ctx context.Context, f File, op Op) error
	PreRead(ctx context.Context, f File, op Op) error
	PostRead(ctx context.Context, f File, op Op) error
	PreWrite(ctx context.Context, f File, op Op) error
	PostWrite(ctx context.Context, f File, op Op) error
	PreSync(ctx context.Context, f File, op Op) error
	PostSync(ctx context.Context, f File, op Op) error
	PreClose(ctx context.Context, f File, op Op) error
	PostClose(ctx context.Context, f File, op Op) error
}

// Policy is a named consistency policy: its knobs and its hooks.
type Policy interface {
	Name() string
	Knobs() Knobs
	Hooks
}

// Base is a Policy whose hooks do what its knobs say (see the package
// documentation). Embed it to write a policy that changes a hook or two.
// The zero Base has no name and the zero Knobs (commit each write, retry,
// no cache).
type Base struct {
	name  string
	knobs Knobs
}

var _ Policy = Base{}

// NewBase returns the knob-driven policy name.
func NewBase(name string, k Knobs) Base { return Base{name: name, knobs: k} }

// Name is the policy's name, as stored in user.tessera.policy.
func (b Base) Name() string { return b.name }

// Knobs are the policy's settings.
func (b Base) Knobs() Knobs { return b.knobs }

// PreOpen revalidates under CacheNone or CloseToOpen, and refuses to
// truncate a committed write-once file.
func (b Base) PreOpen(ctx context.Context, f File, op Op) error {
	if b.knobs.WriteOnce && op.Flags&syscall.O_TRUNC != 0 && op.Flags&syscall.O_ACCMODE != syscall.O_RDONLY && f.Committed() {
		return fmt.Errorf("truncate inode %d: %w", f.Ino(), ErrImmutable)
	}
	if b.knobs.Cache == CacheNone || b.knobs.CloseToOpen {
		return f.Revalidate(ctx)
	}
	return nil
}

// PostOpen does nothing.
func (b Base) PostOpen(ctx context.Context, f File, op Op) error { return nil }

// PreRead revalidates under ReadSynchronized or on an O_RSYNC handle.
func (b Base) PreRead(ctx context.Context, f File, op Op) error {
	if b.knobs.Reads == ReadSynchronized || syncReads(op.Flags) {
		return f.Revalidate(ctx)
	}
	return nil
}

// PostRead does nothing.
func (b Base) PostRead(ctx context.Context, f File, op Op) error { return nil }

// PreWrite refuses to change a committed write-once file.
func (b Base) PreWrite(ctx context.Context, f File, op Op) error {
	if b.knobs.WriteOnce && f.Committed() {
		return fmt.Errorf("write inode %d: %w", f.Ino(), ErrImmutable)
	}
	return nil
}

// PostWrite commits under CommitEachWrite, on an O_SYNC or O_DSYNC handle,
// and under CommitPeriodic once CommitWrites writes are uncommitted.
func (b Base) PostWrite(ctx context.Context, f File, op Op) error {
	k := b.knobs
	switch {
	case k.Commit == CommitEachWrite, syncWrites(op.Flags),
		k.Commit == CommitPeriodic && k.CommitWrites > 0 && f.Dirty() >= k.CommitWrites:
		return f.Commit(ctx)
	}
	return nil
}

// PreSync does nothing: the client commits on fsync in every policy.
func (b Base) PreSync(ctx context.Context, f File, op Op) error { return nil }

// PostSync does nothing.
func (b Base) PostSync(ctx context.Context, f File, op Op) error { return nil }

// PreClose does nothing: the client commits on close in every policy.
func (b Base) PreClose(ctx context.Context, f File, op Op) error { return nil }

// PostClose does nothing.
func (b Base) PostClose(ctx context.Context, f File, op Op) error { return nil }
