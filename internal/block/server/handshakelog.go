package server

import (
	"context"
	"log/slog"
	"strings"

	"tessera/internal/ratelog"
)

// handshakeLog is the http.Server's error log: it passes every line
// through except failed TLS handshakes (a peer with another CA's or an
// expired certificate, a scanner speaking plain HTTP), which are refusals
// too and go out at most once per ratelog interval, with the count of
// those held back. net/http's line names the peer and the reason.
type handshakeLog struct {
	slog.Handler
	lim *ratelog.Limiter
}

func (h handshakeLog) Handle(ctx context.Context, r slog.Record) error {
	if strings.Contains(r.Message, "TLS handshake error") {
		ok, n := h.lim.Allow()
		if !ok {
			return nil
		}
		if n > 0 {
			r.AddAttrs(slog.Int("suppressed", n))
		}
	}
	return h.Handler.Handle(ctx, r)
}

func (h handshakeLog) WithAttrs(as []slog.Attr) slog.Handler {
	return handshakeLog{h.Handler.WithAttrs(as), h.lim}
}

func (h handshakeLog) WithGroup(name string) slog.Handler {
	return handshakeLog{h.Handler.WithGroup(name), h.lim}
}
