package meta

import (
	"context"
	"log/slog"
	"time"
)

// Membership defaults: a block server heartbeats every DefaultHeartbeat and
// is down once silent for DefaultDownAfter; the sweeper looks every
// SweepInterval.
const (
	DefaultHeartbeat = time.Second
	DefaultDownAfter = 5 * time.Second
	SweepInterval    = time.Second
)

// Heartbeat re-registers srv with api every `every` until ctx is done. A
// failed heartbeat is logged and retried at the next tick (the meta service
// may be restarting); only the transitions are logged, not every failure.
// A nil logger discards.
func Heartbeat(ctx context.Context, api API, srv Server, every time.Duration, log *slog.Logger) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if every <= 0 {
		every = DefaultHeartbeat
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		cctx, cancel := context.WithTimeout(ctx, max(every, 2*time.Second))
		_, err := api.RegisterServer(cctx, srv)
		cancel()
		switch {
		case err != nil && ctx.Err() != nil:
			return
		case err != nil && !failing:
			log.Warn("heartbeat failed; retrying", "server", srv.ID, "err", err)
			failing = true
		case err == nil && failing:
			log.Info("heartbeat restored", "server", srv.ID)
			failing = false
		}
	}
}

// SweepLoop runs s.SweepServers every SweepInterval until ctx is done,
// logging every server it marks down. now is the clock (nil: time.Now).
func SweepLoop(ctx context.Context, s *Service, downAfter time.Duration, now func() time.Time, log *slog.Logger) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if now == nil {
		now = time.Now
	}
	if downAfter <= 0 {
		downAfter = DefaultDownAfter
	}
	tick := time.NewTicker(SweepInterval)
	defer tick.Stop()
	var prev ServerMap
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		m, err := s.SweepServers(ctx, now(), downAfter)
		if err != nil {
			if ctx.Err() == nil {
				log.Warn("sweeping block servers", "err", err)
			}
			continue
		}
		if m.Epoch != prev.Epoch {
			for _, srv := range m.Servers {
				if srv.State == StateDown && stateIn(prev, srv.ID) != StateDown {
					log.Warn("block server down", "server", srv.ID, "addr", srv.Addr,
						"silent", now().Sub(time.Unix(0, srv.Seen)).Round(time.Millisecond))
				}
			}
		}
		prev = m
	}
}

// stateIn returns the state of server id in m, "" if absent.
func stateIn(m ServerMap, id string) string {
	for _, s := range m.Servers {
		if s.ID == id {
			return s.State
		}
	}
	return ""
}
