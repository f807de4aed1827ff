package up

import (
	"context"
	"log/slog"
	"time"

	"tessera/internal/kv"
)

// Defaults of the store maintenance the meta role runs over a store that
// keeps a history (kv.Maintainer: etcd; issue 29): a round every five
// minutes, ten minutes of history kept (what scripts/etcd.sh's
// --auto-compaction-retention keeps), and a member defragmented once 64 MiB
// of its file is free.
const (
	DefaultStoreMaintainEvery = 5 * time.Minute
	DefaultStoreRetain        = 10 * time.Minute
	DefaultStoreDefragFree    = 64 << 20
)

// storeMaintainLoop runs a round of st.Maintain at once and then every
// cfg.StoreMaintainEvery until ctx ends (on the elected leader only: the
// caller runs it as a singleton).
func storeMaintainLoop(ctx context.Context, st kv.Maintainer, cfg MetaRole) {
	every, retain, free := cfg.StoreMaintainEvery, cfg.StoreRetain, cfg.StoreDefragFree
	if every == 0 {
		every = DefaultStoreMaintainEvery
	}
	if retain <= 0 {
		retain = DefaultStoreRetain
	}
	if free <= 0 {
		free = DefaultStoreDefragFree
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		m, err := st.Maintain(ctx, time.Now(), kv.MaintainOptions{Retain: retain, DefragFree: free})
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			log.Warn("store maintenance failed", "err", err)
		} else {
			log.Debug("store maintenance", "compacted_rev", m.CompactedRev, "defrag_at", m.DefragAt)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
