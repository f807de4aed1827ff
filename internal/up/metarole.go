package up

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"tessera/internal/admin"
	"tessera/internal/auth"
	"tessera/internal/blockdial"
	"tessera/internal/kv"
	"tessera/internal/meta"
	"tessera/internal/mover"
	"tessera/internal/reclaim"
)

// MetaRole configures the background work of a meta process: the sweeper
// that marks silent block servers down, the mover that repairs and
// rebalances, the reclaimer that removes blocks soon after the last file
// naming them let go (superseded by overwrites: the posix policy leaves one
// per write; deleted files), and the full collection of blocks no file
// refers to, its safety net. Zero fields take the packages' defaults.
type MetaRole struct {
	DownAfter     time.Duration // meta.DefaultDownAfter
	MoverInterval time.Duration // mover.DefaultInterval
	MoverRate     int64         // bytes per second; mover.DefaultRate
	// GCInterval is the time between collections [DefaultGCInterval];
	// negative: none (`tessera gc` still collects).
	GCInterval time.Duration
	// GCGrace keeps unreferenced blocks younger than this: uploads not yet
	// committed [DefaultGCGrace].
	GCGrace time.Duration
	// ReclaimAfter is the reclaimer's safety window [reclaim.DefaultAfter];
	// negative: no reclaimer (blocks wait for the full collection).
	ReclaimAfter time.Duration
	// StoreMaintainEvery is the time between rounds of compaction and
	// defragmentation of a store that keeps a history (etcd)
	// [DefaultStoreMaintainEvery]; negative: none. StoreRetain is the
	// history kept [DefaultStoreRetain], StoreDefragFree the free bytes
	// of a member's file that make it worth defragmenting
	// [DefaultStoreDefragFree] (storemaint.go).
	StoreMaintainEvery time.Duration
	StoreRetain        time.Duration
	StoreDefragFree    int64
	// Creds are the meta process's ("meta" role) credentials, with which
	// the mover, the reclaimer and the collector call the block servers
	// (nil: plain HTTP, --insecure). StartMeta sets them from MetaConfig.
	Creds  *auth.Credentials
	Logger *slog.Logger
}

// DefaultGCInterval and DefaultGCGrace are the background collector's
// defaults: hourly, keeping what was written in the last hour (like
// `tessera gc`).
const (
	DefaultGCInterval = time.Hour
	DefaultGCGrace    = time.Hour
)

// StartMetaRole starts the sweeper, the orphan reaper, the mover, the
// reclaimer, the collector and, over a store that keeps a history (etcd),
// its compaction and defragmentation over svc; the returned function stops them
// and waits for them to return. Over a store other meta processes share
// (svc.Shared), it also runs svc.ServeShared, and each of those singletons
// runs only while this process leads its election (meta.Elected, through
// the store's kv.Elector), so that one of each runs in the cluster.
func StartMetaRole(ctx context.Context, svc *meta.Service, cfg MetaRole) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	dial := blockdial.New(cfg.Creds)
	var wg sync.WaitGroup
	var el kv.Elector
	if svc.Shared() {
		el, _ = svc.Store().(kv.Elector)
		if el == nil && cfg.Logger != nil {
			cfg.Logger.Warn("the shared meta store elects no leader: every meta process runs the collector, the mover and the sweeps")
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := svc.ServeShared(ctx); err != nil && cfg.Logger != nil {
				cfg.Logger.Error("shared meta state", "err", err)
			}
		}()
	}
	single := func(name string, run func(ctx context.Context)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			meta.Elected(ctx, el, "tessera/"+name, svc.ID().String(), cfg.Logger, run)
		}()
	}
	single("sweeper", func(ctx context.Context) { meta.SweepLoop(ctx, svc, cfg.DownAfter, nil, cfg.Logger) })
	single("reaper", func(ctx context.Context) { meta.ReapLoop(ctx, svc, 0, cfg.Logger) })
	mv := mover.New(mover.Config{
		Meta:     svc,
		Dial:     func(s meta.Server) (mover.BlockServer, error) { return dial.Admin(s) },
		Interval: cfg.MoverInterval,
		Rate:     cfg.MoverRate,
		Logger:   cfg.Logger,
	})
	single("mover", mv.Run)
	if cfg.ReclaimAfter >= 0 {
		rc := reclaim.New(reclaim.Config{
			Meta:   svc,
			Dial:   dial.Remover,
			After:  cfg.ReclaimAfter,
			Logger: cfg.Logger,
		})
		single("reclaimer", rc.Run)
	}
	if st, ok := svc.Store().(kv.Maintainer); ok && cfg.StoreMaintainEvery >= 0 {
		single("store-maintenance", func(ctx context.Context) { storeMaintainLoop(ctx, st, cfg) })
	}
	if cfg.GCInterval >= 0 {
		single("gc", func(ctx context.Context) { gcLoop(ctx, svc, dial, cfg) })
	}
	return func() { cancel(); wg.Wait() }
}

// gcLoop collects unreferenced blocks every cfg.GCInterval until ctx ends.
func gcLoop(ctx context.Context, svc *meta.Service, dial *blockdial.Dialer, cfg MetaRole) {
	every, grace := cfg.GCInterval, cfg.GCGrace
	if every == 0 {
		every = DefaultGCInterval
	}
	if grace <= 0 {
		grace = DefaultGCGrace
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &admin.Cluster{Meta: svc, Dial: dial.Admin}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		start := time.Now()
		r, err := admin.GC(ctx, c, grace, start)
		if ctx.Err() != nil {
			return
		}
		switch {
		case err != nil:
			log.Warn("gc: collection incomplete", "removed", r.Removed, "removed_bytes", r.RemovedBytes, "err", err)
		case r.Removed > 0:
			log.Info("gc: removed unreferenced blocks", "removed", r.Removed, "removed_bytes", r.RemovedBytes,
				"live", r.Live, "scanned", r.Scanned, "kept_young", r.KeptYoung, "took", time.Since(start).Round(time.Millisecond))
		default:
			log.Debug("gc: nothing to remove", "live", r.Live, "scanned", r.Scanned, "kept_young", r.KeptYoung)
		}
	}
}
