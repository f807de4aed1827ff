package ratelog

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// maxKeys bounds the messages a Handler keeps a Limiter for; records of
// messages past it share one.
const maxKeys = 64

// Handler passes the records of level Warn and above through one Limiter
// per message (a port's refusal lines: "refused a connection", "refused a
// call"), so that a flood of one kind of refusal writes a line per Every
// with the count held back, while other kinds still get their own line.
// Records below Warn pass untouched.
type Handler struct {
	next  slog.Handler
	every time.Duration
	now   func() time.Time
	lims  *limiters
}

type limiters struct {
	mu     sync.Mutex
	byMsg  map[string]*Limiter
	shared Limiter
}

// NewHandler wraps next; every is the interval (DefaultEvery when 0), now
// the clock (time.Now when nil).
func NewHandler(next slog.Handler, every time.Duration, now func() time.Time) *Handler {
	return &Handler{next: next, every: every, now: now, lims: &limiters{byMsg: map[string]*Limiter{}}}
}

// Enabled implements slog.Handler.
func (h *Handler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

// Handle implements slog.Handler.
func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level < slog.LevelWarn {
		return h.next.Handle(ctx, r)
	}
	ok, n := h.limiter(r.Message).Allow()
	if !ok {
		return nil
	}
	if n > 0 {
		r = r.Clone()
		r.AddAttrs(slog.Int("suppressed", n))
	}
	return h.next.Handle(ctx, r)
}

func (h *Handler) limiter(msg string) *Limiter {
	h.lims.mu.Lock()
	defer h.lims.mu.Unlock()
	l := h.lims.byMsg[msg]
	if l == nil {
		if len(h.lims.byMsg) >= maxKeys {
			l = &h.lims.shared
		} else {
			l = &Limiter{}
			h.lims.byMsg[msg] = l
		}
		l.Every, l.Now = h.every, h.now
	}
	return l
}

// WithAttrs implements slog.Handler; the result shares h's limiters.
func (h *Handler) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.next = h.next.WithAttrs(as)
	return &c
}

// WithGroup implements slog.Handler; the result shares h's limiters.
func (h *Handler) WithGroup(name string) slog.Handler {
	c := *h
	c.next = h.next.WithGroup(name)
	return &c
}
