package meta

import (
	"context"
	"log/slog"
	"time"
)

// ReapOrphans reaps every orphan no live session holds open (see Reap):
// those left by a crash, by a session that expired while it held them, or
// by another Service over the same store. In the restart grace it reaps
// nothing. It returns how many it deleted. First it finishes the drops of
// entries past a file's end that a crash left between segments
// (FinishDrops), so that their blocks' space comes back.
func (s *Service) ReapOrphans(ctx context.Context) (int, error) {
	if _, err := s.FinishDrops(ctx); err != nil {
		return 0, err
	}
	if s.leases.inGrace() {
		return 0, nil
	}
	n := 0
	var after Ino
	for {
		inos, more, err := s.Orphans(ctx, after, 1024)
		if err != nil {
			return n, err
		}
		for _, ino := range inos {
			gone, err := s.reap(ctx, ino)
			if err != nil {
				return n, err
			}
			if gone {
				n++
			}
			after = ino
		}
		if !more || len(inos) == 0 {
			return n, nil
		}
	}
}

// ReapLoop runs ReapOrphans every `every` (0: the session TTL), and when a
// session that held an orphan open ends, until ctx is done: the meta role's
// reaper (in a shared store, its elected leader's), which also cleans up
// after lapsed Services (CleanupDead). A nil logger discards.
func ReapLoop(ctx context.Context, s *Service, every time.Duration, log *slog.Logger) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if every <= 0 {
		every = s.leases.ttl
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		if c, err := s.CleanupDead(ctx); err != nil && ctx.Err() == nil {
			log.Warn("cleaning up lapsed meta services", "cleaned", c, "err", err)
		}
		n, err := s.ReapOrphans(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			log.Warn("reaping orphans", "reaped", n, "err", err)
		case n > 0:
			log.Info("reaped orphans no client holds open", "count", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-s.leases.kick:
		}
	}
}
