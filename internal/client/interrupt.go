package client

import (
	"context"
	"fmt"
	"syscall"
	"time"
)

// Interrupts end waits, not calls.
//
// The kernel sends FUSE an INTERRUPT when the process behind a request gets
// any signal — SIGKILL, but also the signals programs handle all the time
// (Go's runtime preempts its threads with SIGURG). A request whose process
// is being killed must not keep it in state D, while one whose process took
// a signal it handles must complete as if nothing happened: answering EINTR
// there fails an fsync or a close the application never meant to cancel.
// So the client's own waits that have no bound of their own — for
// dirty-memory budget, for a commit's uploads — end with EINTR when the
// request is interrupted and its process is dying (the FUSE layer tells by
// a SIGKILL pending in /proc); until then they go on, checking again every
// interruptPoll. Calls to the meta service are never cut short by it: a
// commit whose outcome the client did not learn would leave it guessing.

// interruptPoll is how often an interrupted wait looks again whether the
// caller is dying (a later SIGKILL brings no second INTERRUPT).
const interruptPoll = 100 * time.Millisecond

type interruptKey struct{}

type interrupt struct {
	ch    <-chan struct{}
	fatal func() bool
}

// WithInterrupt returns a context carrying intr: once intr is closed and
// fatal reports true (fatal nil: at once), the client's unbounded waits
// under this context end with EINTR. The FUSE layer passes the channel
// go-fuse closes on the kernel's INTERRUPT and a check of the caller.
func WithInterrupt(ctx context.Context, intr <-chan struct{}, fatal func() bool) context.Context {
	if intr == nil {
		return ctx
	}
	return context.WithValue(ctx, interruptKey{}, interrupt{intr, fatal})
}

func interruptOf(ctx context.Context) (interrupt, bool) {
	in, ok := ctx.Value(interruptKey{}).(interrupt)
	return in, ok
}

// dying reports whether the request was interrupted and its caller is
// going away.
func (in interrupt) dying() bool {
	select {
	case <-in.ch:
		return in.fatal == nil || in.fatal()
	default:
		return false
	}
}

// interrupted reports whether ctx was cancelled or its request interrupted
// with its caller dying, as an error wrapping EINTR (or the context's).
func interrupted(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if in, ok := interruptOf(ctx); ok && in.dying() {
		return fmt.Errorf("interrupted: %w", syscall.EINTR)
	}
	return nil
}

// onInterrupt calls wake once ctx is cancelled or its request interrupted
// with the caller dying, until stop is called; it is how a wait on a
// sync.Cond learns of it.
func onInterrupt(ctx context.Context, wake func()) (stop func()) {
	in, ok := interruptOf(ctx)
	if !ok && ctx.Done() == nil {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		select {
		case <-in.ch: // nil without an interrupt: never
		case <-ctx.Done():
			wake()
			return
		case <-done:
			return
		}
		t := time.NewTicker(interruptPoll)
		defer t.Stop()
		for !in.dying() && ctx.Err() == nil {
			select {
			case <-t.C:
			case <-ctx.Done():
			case <-done:
				return
			}
		}
		wake()
	}()
	return func() { close(done) }
}
