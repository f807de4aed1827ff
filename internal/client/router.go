package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"tessera/internal/block"
	"tessera/internal/meta"
	"tessera/internal/placement"
)

// Dialer makes a block.Store for a block server of the map.
type Dialer func(s meta.Server) (block.Store, error)

// router sends each block to the servers placement ranks for its hash: a Put
// goes to the first that accepts it, a Get asks them in rank order and falls
// back to the next on a missing, unreachable or corrupt copy.
type router struct {
	api  meta.API
	dial Dialer
	log  *slog.Logger
	mu   struct {
		sync.RWMutex
		epoch  uint64
		ids    []string
		stores map[string]block.Store
		addrs  map[string]string
	}
}

func newRouter(api meta.API, dial Dialer, log *slog.Logger) *router {
	r := &router{api: api, dial: dial, log: log}
	r.mu.stores = make(map[string]block.Store)
	r.mu.addrs = make(map[string]string)
	return r
}

// refresh reloads the server map from the meta service.
func (r *router) refresh(ctx context.Context) error {
	m, err := r.api.Servers(ctx)
	if err != nil {
		return fmt.Errorf("load block-server map: %w", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if m.Epoch == r.mu.epoch && len(r.mu.ids) > 0 {
		return nil
	}
	ids := make([]string, 0, len(m.Servers))
	for _, s := range m.Servers {
		if s.State == "down" {
			continue
		}
		if st, ok := r.mu.stores[s.ID]; !ok || r.mu.addrs[s.ID] != s.Addr || st == nil {
			st, err := r.dial(s)
			if err != nil {
				return fmt.Errorf("block server %s at %s: %w", s.ID, s.Addr, err)
			}
			r.mu.stores[s.ID] = st
			r.mu.addrs[s.ID] = s.Addr
		}
		ids = append(ids, s.ID)
	}
	r.mu.ids = ids
	r.mu.epoch = m.Epoch
	return nil
}

type rankedStore struct {
	id string
	st block.Store
}

func (r *router) ranked(h block.Hash) []rankedStore {
	r.mu.RLock()
	defer r.mu.RUnlock()
	ids := placement.Pick(h, r.mu.ids, len(r.mu.ids))
	out := make([]rankedStore, len(ids))
	for i, id := range ids {
		out[i] = rankedStore{id: id, st: r.mu.stores[id]}
	}
	return out
}

// put stores data on the first server in rank order that accepts it.
func (r *router) put(ctx context.Context, h block.Hash, data []byte) error {
	stores := r.ranked(h)
	if len(stores) == 0 {
		return fmt.Errorf("put block %s: no block server in the map: %w", h.Short(), block.ErrUnavailable)
	}
	var errs []error
	for _, s := range stores {
		err := s.st.Put(ctx, h, data)
		if err == nil {
			return nil
		}
		errs = append(errs, fmt.Errorf("server %s: %w", s.id, err))
		if ctx.Err() != nil {
			break
		}
	}
	return fmt.Errorf("put block %s: %w", h.Short(), errors.Join(errs...))
}

// localStore is implemented by stores that read block files of this host
// (disk.LocalReader): their blocks are not worth a copy in the disk cache.
type localStore interface{ IsLocal() bool }

// get fetches a verified copy of h; local reports that it came from a block
// file on this host.
func (r *router) get(ctx context.Context, h block.Hash) (data []byte, local bool, err error) {
	stores := r.ranked(h)
	if len(stores) == 0 {
		return nil, false, fmt.Errorf("get block %s: no block server in the map: %w", h.Short(), block.ErrUnavailable)
	}
	var errs []error
	for _, s := range stores {
		data, err := s.st.Get(ctx, h)
		if err == nil {
			ls, ok := s.st.(localStore)
			return data, ok && ls.IsLocal(), nil
		}
		if errors.Is(err, block.ErrCorrupt) {
			r.log.Error("corrupt block copy", "block", h.String(), "server", s.id, "err", err)
		}
		errs = append(errs, fmt.Errorf("server %s: %w", s.id, err))
		if ctx.Err() != nil {
			break
		}
	}
	return nil, false, fmt.Errorf("get block %s: %w", h.Short(), errors.Join(errs...))
}
