package pebblekv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/cockroachdb/pebble"

	"tessera/internal/kv"
)

// This file gives the store the in-process change feed and elector of
// package kvlocal.

var (
	_ kv.Watcher = (*Store)(nil)
	_ kv.Elector = (*Store)(nil)
)

// Watch implements kv.Watcher: the commits of this process since it opened
// the store (revisions restart at each Open).
func (s *Store) Watch(ctx context.Context, prefix []byte, from int64) (<-chan []kv.Change, error) {
	return s.feed.Watch(ctx, prefix, from)
}

// Campaign implements kv.Elector within this process.
func (s *Store) Campaign(ctx context.Context, name, id string) (kv.Leadership, error) {
	return s.elector.Campaign(ctx, name, id)
}

// changes returns the net writes of batch b, by key, for the feed: the last
// Set of each key, and a delete of each key it removed that the committed
// state holds. The caller holds the writer lock, so the committed state is
// the one b was built on.
func (s *Store) changes(b *pebble.Batch) ([]kv.Change, error) {
	last := make(map[string]kv.Change)
	r := b.Reader()
	for {
		kind, k, v, ok, err := r.Next()
		if err != nil {
			return nil, fmt.Errorf("pebblekv: read batch: %w", err)
		}
		if !ok {
			break
		}
		switch kind {
		case pebble.InternalKeyKindSet:
			last[string(k)] = kv.Change{Key: bytes.Clone(k), Value: clone(v)}
		case pebble.InternalKeyKindDelete:
			last[string(k)] = kv.Change{Key: bytes.Clone(k), Deleted: true}
		}
	}
	out := make([]kv.Change, 0, len(last))
	for _, c := range last {
		if c.Deleted {
			_, closer, err := s.db.Get(c.Key)
			if errors.Is(err, pebble.ErrNotFound) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("pebblekv: get %q: %w", c.Key, err)
			}
			closer.Close()
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return bytes.Compare(out[i].Key, out[j].Key) < 0 })
	return out, nil
}
