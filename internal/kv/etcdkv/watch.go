package etcdkv

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	"tessera/internal/kv"
)

// Watch implements kv.Watcher; see the package comment.
func (s *Store) Watch(ctx context.Context, prefix []byte, from int64) (<-chan []kv.Change, error) {
	if err := s.check(ctx); err != nil {
		return nil, fmt.Errorf("etcdkv: watch: %w", err)
	}
	key := s.data + string(prefix)
	if from <= 0 {
		// etcd registers a watch without a revision some time after the
		// call; start at the revision current now instead, so that no
		// commit after Watch returns is missed.
		// (A read of one key: counting the prefix would walk it.)
		resp, err := s.cli.Get(clientv3.WithRequireLeader(ctx), key, clientv3.WithKeysOnly())
		if err != nil {
			return nil, fmt.Errorf("etcdkv: watch %q: %w", prefix, err)
		}
		from = resp.Header.Revision
	}
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	wch := s.cli.Watch(wctx, key, clientv3.WithPrefix(), clientv3.WithRev(from+1),
		// Progress notifications (empty responses) keep an idle watch's
		// stream known alive; they deliver nothing.
		clientv3.WithProgressNotify())
	out := make(chan []kv.Change)
	go func() {
		defer close(out)
		defer cancel()
		for resp := range wch {
			if resp.Canceled || resp.Err() != nil {
				return // compacted, no leader, or closed: the caller resyncs
			}
			var batch []kv.Change
			for i, ev := range resp.Events {
				c := kv.Change{
					Key: ev.Kv.Key[len(s.data):],
					Rev: ev.Kv.ModRevision,
				}
				if ev.Type == clientv3.EventTypeDelete {
					c.Deleted = true
				} else {
					c.Value = nonNil(ev.Kv.Value)
				}
				batch = append(batch, c)
				// One response may hold several revisions: one batch each.
				if i+1 == len(resp.Events) || resp.Events[i+1].Kv.ModRevision != c.Rev {
					select {
					case out <- batch:
					case <-ctx.Done():
						return
					}
					batch = nil
				}
			}
		}
	}()
	return out, nil
}
