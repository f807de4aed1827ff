package client

import (
	"context"
	"fmt"
	"syscall"
)

// Interrupts end waits, not calls.
//
// The kernel sends FUSE an INTERRUPT when the process behind a request gets
// a signal (SIGKILL included); until the daemon answers, that process sits
// in state D. The client's own waits that have no bound of their own — for
// dirty-memory budget, for a commit's uploads — end with EINTR when the
// request is interrupted, so a killed writer goes away at once. Calls to
// the meta service are not cut short by it: a commit whose outcome the
// client did not learn would leave it guessing.

type interruptKey struct{}

// WithInterrupt returns a context carrying intr: when intr is closed, the
// client's unbounded waits under this context end with EINTR. The FUSE layer
// passes the channel go-fuse closes on the kernel's INTERRUPT.
func WithInterrupt(ctx context.Context, intr <-chan struct{}) context.Context {
	if intr == nil {
		return ctx
	}
	return context.WithValue(ctx, interruptKey{}, intr)
}

// interruptOf returns the interrupt channel of ctx, nil when it has none.
func interruptOf(ctx context.Context) <-chan struct{} {
	intr, _ := ctx.Value(interruptKey{}).(<-chan struct{})
	return intr
}

// interrupted reports whether ctx was cancelled or its request interrupted,
// as an error wrapping EINTR (or the context's error).
func interrupted(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if intr := interruptOf(ctx); intr != nil {
		select {
		case <-intr:
			return fmt.Errorf("interrupted: %w", syscall.EINTR)
		default:
		}
	}
	return nil
}

// onInterrupt calls wake once ctx is cancelled or interrupted, until stop
// is called; it is how a wait on a sync.Cond learns of an interrupt.
func onInterrupt(ctx context.Context, wake func()) (stop func()) {
	intr := interruptOf(ctx)
	if intr == nil && ctx.Done() == nil {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		select {
		case <-intr:
			wake()
		case <-ctx.Done():
			wake()
		case <-done:
		}
	}()
	return func() { close(done) }
}
