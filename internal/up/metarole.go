package up

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"tessera/internal/meta"
	"tessera/internal/mover"
)

// MetaRole configures the background work of a meta process: the sweeper
// that marks silent block servers down and the mover that repairs and
// rebalances. Zero fields take the packages' defaults.
type MetaRole struct {
	DownAfter     time.Duration // meta.DefaultDownAfter
	MoverInterval time.Duration // mover.DefaultInterval
	MoverRate     int64         // bytes per second; mover.DefaultRate
	Logger        *slog.Logger
}

// StartMetaRole starts the sweeper and the mover over svc; the returned
// function stops them and waits for them to return.
func StartMetaRole(ctx context.Context, svc *meta.Service, cfg MetaRole) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		meta.SweepLoop(ctx, svc, cfg.DownAfter, nil, cfg.Logger)
	}()
	mv := mover.New(mover.Config{
		Meta:     svc,
		Dial:     func(s meta.Server) (mover.BlockServer, error) { return DialAdmin(s) },
		Interval: cfg.MoverInterval,
		Rate:     cfg.MoverRate,
		Logger:   cfg.Logger,
	})
	go func() {
		defer wg.Done()
		mv.Run(ctx)
	}()
	return func() { cancel(); wg.Wait() }
}
