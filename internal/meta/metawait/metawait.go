package metawait

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"syscall"
	"time"

	"tessera/internal/backoff"
	"tessera/internal/meta"
)

// DefaultTimeout is how long a call waits for an unavailable meta service
// unless Options.Timeout says otherwise.
const DefaultTimeout = 60 * time.Second

// retryBackoff is the wait between attempts: 50 ms doubling to 1 s.
var retryBackoff = backoff.Policy{Base: 50 * time.Millisecond, Max: time.Second}

// interruptPoll is how often a wait whose request was interrupted looks
// again whether its caller is dying.
const interruptPoll = 100 * time.Millisecond

// Clock is the time source of the waits.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Options configure New.
type Options struct {
	// Timeout is how long a call waits for the service, from its first
	// failed attempt: 0 means DefaultTimeout, negative forever.
	Timeout time.Duration
	// Clock: nil means the real clock.
	Clock Clock
	// Interrupt, if set, returns for a call's context the channel closed
	// when the call's request is interrupted, and a check whether its
	// caller is dying (nil, nil: the context carries no request). A wait
	// ends with EINTR once both hold.
	Interrupt func(ctx context.Context) (<-chan struct{}, func() bool)
	// OnBack, if set, is called when a call gets an answer after calls
	// found the service unavailable, by that call: it must not block.
	OnBack func()
	Logger *slog.Logger // nil: slog.Default()
}

// API is a meta.API that waits out outages of the one it wraps. Copies
// made by WithSession share its state. The optional meta interfaces
// (meta.OptionalInterfaces) are passed on as they are, without waiting
// (meta.Forward): they are the calls of gateways and admin commands, which
// retry on their own terms.
type API struct {
	meta.API
	meta.Forward
	st *state
}

var (
	_ meta.API             = (*API)(nil)
	_ meta.SessionBinder   = (*API)(nil)
	_ meta.BlockLister     = (*API)(nil)
	_ meta.FilesetAPI      = (*API)(nil)
	_ meta.FilesetReadsAPI = (*API)(nil)
	_ meta.EvictAPI        = (*API)(nil)
	_ meta.VanishAPI       = (*API)(nil)
	_ meta.WritebackAPI    = (*API)(nil)
	_ meta.GatewaysAPI     = (*API)(nil)
)

// state is what an API and its session-bound copies share.
type state struct {
	opts Options
	down atomic.Bool // the latest call found the service unavailable
}

// New returns api waiting out outages as Options say.
func New(api meta.API, opts Options) *API {
	if opts.Timeout == 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Clock == nil {
		opts.Clock = realClock{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &API{API: api, Forward: meta.Forward{Next: api}, st: &state{opts: opts}}
}

// WithSession implements meta.SessionBinder when the wrapped API does (else
// it returns a itself): the bound API waits the same way and shares a's
// view of the service.
func (a *API) WithSession(id meta.SessionID) meta.API {
	b, ok := a.API.(meta.SessionBinder)
	if !ok {
		return a
	}
	bound := b.WithSession(id)
	return &API{API: bound, Forward: meta.Forward{Next: bound}, st: a.st}
}

// Down reports whether the latest call found the service unavailable.
func (a *API) Down() bool { return a.st.down.Load() }

type noWaitKey struct{}

// NoWait returns a context under which calls are sent once, and not at all
// while the service is known to be down: the caller has something else to
// do when the service is unavailable (serve what it cached).
func NoWait(ctx context.Context) context.Context {
	return context.WithValue(ctx, noWaitKey{}, true)
}

func noWait(ctx context.Context) bool { v, _ := ctx.Value(noWaitKey{}).(bool); return v }

// saw records the outcome of an attempt: whether the service answered.
func (s *state) saw(op string, err error) {
	unavailable := meta.Unavailable(err)
	if !unavailable && errors.Is(err, context.Canceled) {
		return // the caller gave up: that says nothing of the service
	}
	// Every call passes here: the common case, no change, takes no lock.
	if s.down.Load() == unavailable || !s.down.CompareAndSwap(!unavailable, unavailable) {
		return
	}
	if unavailable {
		wait := "forever"
		if s.opts.Timeout > 0 {
			wait = s.opts.Timeout.String()
		}
		s.opts.Logger.Warn("meta service unavailable; calls wait for it", "op", op, "wait", wait, "err", err)
		return
	}
	s.opts.Logger.Info("meta service answers again", "op", op)
	if s.opts.OnBack != nil {
		s.opts.OnBack()
	}
}

// once sends a call the API does not retry, noting what it says of the
// service.
func (a *API) once(op string, try func() error) error {
	err := try()
	a.st.saw(op, err)
	return err
}

// call runs try until it gets an answer of the service, the time is up, or
// the caller goes (see the package comment). After an attempt whose reply
// was lost, applied (when set) is asked first whether that attempt was
// applied; if so, call returns nil without sending it again.
func (a *API) call(ctx context.Context, op string, try func(ctx context.Context) error, applied func(ctx context.Context) (bool, error)) error {
	s := a.st
	if noWait(ctx) && a.Down() {
		return fmt.Errorf("%s: %w", op, meta.ErrUnreachable)
	}
	var (
		start time.Time
		doubt bool
		bo    = retryBackoff.Start()
		intr  <-chan struct{}
		dying func() bool
		fired bool
	)
	for {
		var err error
		if doubt && applied != nil {
			var done bool
			done, err = applied(ctx)
			switch {
			case err == nil && done:
				s.saw(op, nil)
				return nil
			case err == nil || !meta.Unavailable(err):
				// Not applied, or no telling: send it again.
				doubt = false
				err = try(ctx)
			}
		} else {
			err = try(ctx)
		}
		s.saw(op, err)
		if !meta.Unavailable(err) {
			return err
		}
		if errors.Is(err, meta.ErrReplyLost) {
			doubt = true
		}
		if noWait(ctx) {
			return err
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%s: waiting for the meta service: %w (%w)", op, ctx.Err(), err)
		}
		now := s.opts.Clock.Now()
		if start.IsZero() {
			start = now
			if s.opts.Interrupt != nil {
				intr, dying = s.opts.Interrupt(ctx)
			}
		}
		wait := bo.Next()
		if s.opts.Timeout > 0 {
			left := start.Add(s.opts.Timeout).Sub(now)
			if left <= 0 {
				return fmt.Errorf("%s: no answer from the meta service for %v: %w", op, s.opts.Timeout, err)
			}
			wait = min(wait, left)
		}
		if fired {
			wait = min(wait, interruptPoll)
		}
		ch := intr
		if fired {
			ch = nil // closed for good; polled instead
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: waiting for the meta service: %w (%w)", op, ctx.Err(), err)
		case <-ch:
			fired = true
		case <-s.opts.Clock.After(wait):
		}
		if fired && (dying == nil || dying()) {
			return fmt.Errorf("%s: waiting for the meta service: interrupted: %w", op, syscall.EINTR)
		}
	}
}
