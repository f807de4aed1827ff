package server

import (
	"fmt"
	"net/http"
	"time"
)

// Limits bound what the peers of a block server can make it hold: open
// connections, request bytes in memory, and how long a request may take to
// arrive. A zero field takes its default (DefaultLimits); the package doc
// says what a peer sees when it hits one.
type Limits struct {
	// MaxConns is the most connections open at once; MaxConnsPerIP the
	// most from one peer address. A connection past either gets a 503
	// and is closed before its request is read (LimitListener).
	MaxConns      int
	MaxConnsPerIP int
	// MaxInFlight is the most request-body bytes (PUT blocks, /v1/has
	// batches) held at once; MaxInFlightPerIP the most for one peer
	// address. A request reserves its declared length before its buffer
	// is allocated; one that does not fit waits (BudgetWait at most, then
	// 503) while holding nothing. MaxInFlightPerIP is raised to the
	// maximum block size if below it, MaxInFlight to MaxInFlightPerIP.
	MaxInFlight      int64
	MaxInFlightPerIP int64
	// BudgetWait is the longest a request waits for its bytes.
	BudgetWait time.Duration
	// ReadHeaderTimeout bounds the reading of a request's headers (also
	// of a new connection's first request); MaxHeaderBytes their size.
	ReadHeaderTimeout time.Duration
	MaxHeaderBytes    int
	// IdleTimeout closes a kept-alive connection with no request.
	IdleTimeout time.Duration
	// BodyIdleTimeout is the longest a request body may go without a
	// byte arriving; a body must also arrive at MinBodyRate bytes per
	// second on average after a BodyGrace head start.
	BodyIdleTimeout time.Duration
	MinBodyRate     int64
	BodyGrace       time.Duration
	// WriteTimeout bounds the writing of a reply once the handler has it
	// (block bodies and listings extend it as they progress).
	WriteTimeout time.Duration
	// ReleaseAfter is how long the server waits, once a burst of at least
	// ReleaseAbove bytes in flight has drained, before it empties its
	// buffer pool and returns free memory to the system.
	ReleaseAfter time.Duration
	ReleaseAbove int64
}

// DefaultLimits are the limits of a block server unless configured.
func DefaultLimits() Limits {
	return Limits{
		MaxConns:          1024,
		MaxConnsPerIP:     256,
		MaxInFlight:       256 << 20,
		MaxInFlightPerIP:  128 << 20,
		BudgetWait:        time.Minute,
		ReadHeaderTimeout: 10 * time.Second,
		MaxHeaderBytes:    64 << 10,
		IdleTimeout:       2 * time.Minute,
		BodyIdleTimeout:   15 * time.Second,
		MinBodyRate:       1 << 20,
		BodyGrace:         30 * time.Second,
		WriteTimeout:      time.Minute,
		ReleaseAfter:      5 * time.Second,
		ReleaseAbove:      64 << 20,
	}
}

// WithDefaults returns l with every zero field set from DefaultLimits and
// the in-flight budgets raised to hold one block of maxBlock bytes.
func (l Limits) WithDefaults(maxBlock int64) Limits {
	d := DefaultLimits()
	set := func(v *int64, def int64) {
		if *v <= 0 {
			*v = def
		}
	}
	setD := func(v *time.Duration, def time.Duration) {
		if *v <= 0 {
			*v = def
		}
	}
	if l.MaxConns <= 0 {
		l.MaxConns = d.MaxConns
	}
	if l.MaxConnsPerIP <= 0 {
		l.MaxConnsPerIP = d.MaxConnsPerIP
	}
	if l.MaxHeaderBytes <= 0 {
		l.MaxHeaderBytes = d.MaxHeaderBytes
	}
	set(&l.MaxInFlight, d.MaxInFlight)
	set(&l.MaxInFlightPerIP, d.MaxInFlightPerIP)
	set(&l.MinBodyRate, d.MinBodyRate)
	set(&l.ReleaseAbove, d.ReleaseAbove)
	setD(&l.BudgetWait, d.BudgetWait)
	setD(&l.ReadHeaderTimeout, d.ReadHeaderTimeout)
	setD(&l.IdleTimeout, d.IdleTimeout)
	setD(&l.BodyIdleTimeout, d.BodyIdleTimeout)
	setD(&l.BodyGrace, d.BodyGrace)
	setD(&l.WriteTimeout, d.WriteTimeout)
	setD(&l.ReleaseAfter, d.ReleaseAfter)
	// A block must fit, or it could never be stored.
	l.MaxInFlightPerIP = max(l.MaxInFlightPerIP, maxBlock)
	l.MaxInFlight = max(l.MaxInFlight, l.MaxInFlightPerIP)
	l.MaxConns = max(l.MaxConns, l.MaxConnsPerIP)
	return l
}

// Check reports a limit set to a negative value (zero means the default).
func (l Limits) Check() error {
	switch {
	case l.MaxConns < 0 || l.MaxConnsPerIP < 0:
		return fmt.Errorf("block server limits: connection caps %d and %d per IP must not be negative", l.MaxConns, l.MaxConnsPerIP)
	case l.MaxInFlight < 0 || l.MaxInFlightPerIP < 0:
		return fmt.Errorf("block server limits: in-flight bytes %d and %d per IP must not be negative", l.MaxInFlight, l.MaxInFlightPerIP)
	}
	return nil
}

// ConfigureServer sets srv's timeouts and header bound from l (defaults
// filled in).
func (l Limits) ConfigureServer(srv *http.Server) {
	l = l.WithDefaults(0)
	srv.ReadHeaderTimeout = l.ReadHeaderTimeout
	srv.IdleTimeout = l.IdleTimeout
	srv.WriteTimeout = l.WriteTimeout
	srv.MaxHeaderBytes = l.MaxHeaderBytes
}

// bodyDeadline is when a body of n bytes whose reading starts at start must
// be complete: BodyGrace plus its length at MinBodyRate. Generous; it only
// stops a peer that trickles from pinning a handler and its budget.
func (l Limits) bodyDeadline(start time.Time, n int64) time.Time {
	r := l.MinBodyRate
	return start.Add(l.BodyGrace + time.Duration(n/r)*time.Second + time.Duration(n%r)*time.Second/time.Duration(r))
}

// initLimits sets up h's budget and its memory release from l.
func (h *Handler) initLimits(l Limits) {
	h.lim = l.WithDefaults(h.max)
	h.rel = &releaser{l: h.lim, clock: h.clock, pool: &h.bufs, log: h.log}
	h.budget = newBudget(h.lim, h.clock, h.rel.drained)
	h.rel.idle = func() bool { return h.budget.inFlight() == 0 }
}

// reserve takes n bytes of r's peer's in-flight budget (see budget).
func (h *Handler) reserve(r *http.Request, n int64) (release func(), err error) {
	return h.budget.acquire(r.Context(), peerOf(r.RemoteAddr), n)
}

// replyDeadline gives the reply WriteTimeout from now to be written: the
// server's own deadline ran from the request's arrival, and the work
// before the reply (a body received, a block made durable, a check) may
// have taken some of it.
func (h *Handler) replyDeadline(w http.ResponseWriter) {
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(h.lim.WriteTimeout))
}
