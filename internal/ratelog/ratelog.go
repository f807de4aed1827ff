// Package ratelog keeps a repeating error from flooding the log: a Limiter
// lets one line through per interval and counts the ones it held back, which
// the next line reports as "suppressed". A full disk or a dead server makes
// the same error thousands of times a second; one line every few seconds
// says as much.
package ratelog

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// DefaultEvery is the interval of a zero Limiter.
const DefaultEvery = 5 * time.Second

// Limiter passes one log line per Every (DefaultEvery when zero). The zero
// value is ready to use; a Limiter must not be copied after first use.
type Limiter struct {
	Every time.Duration
	// Now is the clock (time.Now when nil); tests inject theirs.
	Now func() time.Time

	mu         sync.Mutex
	last       time.Time
	suppressed int
}

// Allow reports whether a line may go out now, and how many were held back
// since the last one that did.
func (l *Limiter) Allow() (ok bool, suppressed int) {
	now := time.Now
	if l.Now != nil {
		now = l.Now
	}
	every := l.Every
	if every <= 0 {
		every = DefaultEvery
	}
	t := now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.last.IsZero() && t.Sub(l.last) < every {
		l.suppressed++
		return false, 0
	}
	l.last = t
	n := l.suppressed
	l.suppressed = 0
	return true, n
}

// Log writes msg at level through log unless a line went out less than
// Every ago.
func (l *Limiter) Log(log *slog.Logger, level slog.Level, msg string, args ...any) {
	ok, n := l.Allow()
	if !ok || log == nil {
		return
	}
	if n > 0 {
		args = append(args, "suppressed", n)
	}
	log.Log(context.Background(), level, msg, args...)
}
