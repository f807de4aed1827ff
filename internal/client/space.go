package client

import (
	"context"
	"errors"
	"sync"
	"time"

	"tessera/internal/block"
)

// spaceTimeout bounds how long Space waits for a block server's answer: a
// server that does not answer in time is left out of the sums, so that df
// never hangs on one.
const spaceTimeout = 2 * time.Second

// Space returns the room the cluster has for new data as a file system's
// free and total bytes: the free and total bytes of the file systems of the
// block servers taking new blocks (each file system counted once, however
// many servers share it: block.Space.FS), divided by the default number of
// replicas, since every byte written takes that many. A server that cannot
// say or does not answer is left out; block.ErrNoSpaceInfo when none could
// say. It is a mount's statfs (df).
func (c *Client) Space(ctx context.Context) (free, size int64, err error) {
	return c.router.space(ctx)
}

func (r *router) space(ctx context.Context) (free, size int64, err error) {
	r.mu.RLock()
	ids := append([]string(nil), r.mu.up...)
	stores := make([]block.Store, len(ids))
	for i, id := range ids {
		stores[i] = r.mu.stores[id]
	}
	replicas := int64(max(r.mu.replicas, 1))
	r.mu.RUnlock()

	ctx, cancel := context.WithTimeout(ctx, spaceTimeout)
	defer cancel()
	spaces := make([]block.Space, len(stores))
	errs := make([]error, len(stores))
	var wg sync.WaitGroup
	for i, st := range stores {
		sr, ok := st.(block.SpaceReporter)
		if !ok {
			errs[i] = block.ErrNoSpaceInfo
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			spaces[i], errs[i] = sr.SpaceInfo(ctx)
		}()
	}
	wg.Wait()
	seen := make(map[string]bool, len(stores))
	answered := 0
	for i, sp := range spaces {
		if errs[i] != nil {
			continue
		}
		answered++
		key := "fs " + sp.FS
		if sp.FS == "" {
			key = "server " + ids[i] // cannot tell: its own
		}
		if seen[key] {
			continue
		}
		seen[key] = true
		free += sp.Free
		size += sp.Size
	}
	if answered == 0 {
		return 0, 0, errors.Join(block.ErrNoSpaceInfo, errors.Join(errs...))
	}
	return free / replicas, size / replicas, nil
}
