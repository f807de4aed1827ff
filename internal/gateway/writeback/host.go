package writeback

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"tessera/internal/gateway/home"
	"tessera/internal/meta"
)

// Filesets lists the filesets (meta.FilesetAPI has it).
type Filesets interface {
	Filesets(ctx context.Context) ([]meta.Fileset, error)
}

// Host runs an Applier in a gateway process: every round it lists the
// filesets, opens the homes of the sw and iw ones (once per URL), and
// applies what is due; between rounds that applied nothing it waits
// Poll (default 1 s). Close stops it and closes the homes.
type Host struct {
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	homes  map[string]home.Store
}

// StartHost starts a Host over the applier a and the fileset list fs.
func StartHost(a *Applier, fs Filesets, poll time.Duration, log *slog.Logger) *Host {
	if poll <= 0 {
		poll = time.Second
	}
	ctx, cancel := context.WithCancel(context.Background())
	h := &Host{cancel: cancel, done: make(chan struct{}), homes: map[string]home.Store{}}
	sets := func() []Fileset {
		l, err := fs.Filesets(ctx)
		if err != nil {
			if ctx.Err() == nil {
				log.Warn("write-back: cannot list filesets", "err", err)
			}
			return nil
		}
		var out []Fileset
		for _, f := range l {
			if f.Mode != meta.ModeSW && f.Mode != meta.ModeIW {
				continue
			}
			st, err := h.home(ctx, f.Home)
			if err != nil {
				log.Warn("write-back: cannot open home", "fileset", f.Root, "home", f.Home, "err", err)
				continue
			}
			out = append(out, Fileset{Root: f.Root, Home: st, Conflicts: f.Conflicts, SyncLag: f.SyncLag})
		}
		return out
	}
	wait := func(ctx context.Context) error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(poll):
			return nil
		}
	}
	go func() {
		defer close(h.done)
		a.Run(ctx, sets, wait)
	}()
	return h
}

func (h *Host) home(ctx context.Context, url string) (home.Store, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if st, ok := h.homes[url]; ok {
		return st, nil
	}
	st, err := home.Open(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("open home %s: %w", url, err)
	}
	h.homes[url] = st
	return st, nil
}

// Close stops the Host and waits for its round in progress.
func (h *Host) Close() error {
	h.cancel()
	<-h.done
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, st := range h.homes {
		st.Close()
	}
	return nil
}
