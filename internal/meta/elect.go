package meta

import (
	"context"
	"log/slog"
	"time"

	"tessera/internal/kv"
)

// ElectionRetry is how long Elected waits before campaigning again after a
// failed campaign (the store unreachable).
const ElectionRetry = time.Second

// Elected runs run, work that must run once per cluster (the block
// collector, the mover, the reaper's sweeps, the server-map sweeps), while
// the caller, named id, leads the election called name of el; run's context
// ends when the leadership is lost, and Elected campaigns again, until ctx
// ends. With a nil el (a store no other process shares) it just runs run.
// A nil logger discards.
func Elected(ctx context.Context, el kv.Elector, name, id string, log *slog.Logger, run func(ctx context.Context)) {
	if el == nil {
		run(ctx)
		return
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	for ctx.Err() == nil {
		lead, err := el.Campaign(ctx, name, id)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			log.Warn("campaigning", "election", name, "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(ElectionRetry):
			}
			continue
		}
		log.Info("leading", "election", name, "id", id)
		rctx, cancel := context.WithCancel(ctx)
		lost := make(chan struct{})
		go func() {
			defer close(lost)
			select {
			case <-lead.Done():
				cancel()
			case <-rctx.Done():
			}
		}()
		run(rctx)
		cancel()
		<-lost
		select {
		case <-lead.Done():
			if ctx.Err() == nil {
				log.Warn("lost the leadership", "election", name, "id", id)
			}
		default:
			// ctx ended (or run returned by itself): let another
			// candidate take over at once.
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			_ = lead.Resign(rctx)
			cancel()
		}
	}
}
