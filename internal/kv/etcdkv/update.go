package etcdkv

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/google/btree"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"tessera/internal/kv"
)

// Update implements kv.Store; see the package comment.
func (s *Store) Update(ctx context.Context, fn func(tx kv.Txn) error) error {
	backoff := time.Millisecond
	var leaderless time.Time // when answers of "no leader" began
	for attempt := 1; ; attempt++ {
		if err := s.check(ctx); err != nil {
			return fmt.Errorf("etcdkv: update: %w", err)
		}
		t := &txn{
			s: s, ctx: clientv3.WithRequireLeader(ctx), writable: true,
			buf:   btree.NewG(8, writeLess),
			reads: make(map[string]read),
		}
		err := fn(t)
		t.finish()
		ok := false
		if err == nil {
			ok, err = s.commit(t.ctx, t)
		}
		// A commit refused for want of a leader was not proposed, and a
		// transaction that failed on a read wrote nothing: either may run
		// again once the cluster has a leader (elections under load).
		if isNoLeader(err) || (err != nil && t.readErr != nil && ctx.Err() == nil && isTransient(t.readErr)) {
			// Wait for a leader, up to MajorityWait, then say so.
			if leaderless.IsZero() {
				leaderless = time.Now()
			} else if time.Since(leaderless) >= s.opts.MajorityWait {
				return fmt.Errorf("etcdkv: update: no leader for %v: %w (%v)", s.opts.MajorityWait, ErrNoMajority, err)
			}
			attempt-- // not a conflict
			if err := sleep(ctx, 100*time.Millisecond+rand.N(400*time.Millisecond)); err != nil {
				return fmt.Errorf("etcdkv: update: waiting for an etcd leader: %w", err)
			}
			continue
		}
		leaderless = time.Time{}
		if err != nil || ok {
			return err
		}
		if attempt >= s.opts.MaxAttempts {
			return fmt.Errorf("etcdkv: update: %d attempts: %w", attempt, kv.ErrConflict)
		}
		// Randomized so that transactions that collided do not collide
		// again in lock step.
		if err := sleep(ctx, backoff/2+rand.N(backoff)); err != nil {
			return fmt.Errorf("etcdkv: update: %w", err)
		}
		backoff = min(2*backoff, 100*time.Millisecond)
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// isTransient reports whether a read failed for a reason that passes once
// the cluster has (re-)elected a leader and the client reaches it.
func isTransient(err error) bool {
	for _, e := range []error{rpctypes.ErrNoLeader, rpctypes.ErrLeaderChanged, rpctypes.ErrTimeout,
		rpctypes.ErrTimeoutDueToLeaderFail, rpctypes.ErrTimeoutDueToConnectionLost, rpctypes.ErrTimeoutWaitAppliedIndex} {
		if errors.Is(err, e) || strings.Contains(err.Error(), rpctypes.ErrorDesc(e)) {
			return true
		}
	}
	return status.Code(errors.Unwrap(err)) == codes.Unavailable || status.Code(err) == codes.Unavailable
}

// isNoLeader reports whether etcd refused a request because the member has
// no leader: a request with WithRequireLeader is refused before it is
// proposed, so it was not applied.
func isNoLeader(err error) bool {
	return err != nil && (errors.Is(err, rpctypes.ErrNoLeader) || strings.Contains(err.Error(), rpctypes.ErrorDesc(rpctypes.ErrNoLeader)))
}

// commit sends t as one etcd Txn. It returns false when a compare failed
// (a conflict), an error when the Txn is too large or etcd failed.
func (s *Store) commit(ctx context.Context, t *txn) (bool, error) {
	if t.buf.Len() == 0 {
		return true, nil // read-only: the snapshot was consistent
	}
	var (
		cmps  []clientv3.Cmp
		ops   []clientv3.Op
		bytes int
	)
	// Per request and per compare or operation, what etcd's encoding adds
	// around keys and values, generously.
	const reqOverhead, itemOverhead = 64, 32
	bytes = reqOverhead
	for k, r := range t.reads {
		key := s.data + k
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(key), "=", r.modRev))
		bytes += len(key) + itemOverhead
	}
	for _, sp := range t.ranges {
		if t.rev == 0 {
			break // nothing was read from etcd
		}
		end := clientv3.GetPrefixRangeEnd(s.data)
		if sp.end != nil {
			end = s.data + string(sp.end)
		}
		start := s.data + string(sp.start)
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(start), "<", t.rev+1).WithRange(end))
		bytes += len(start) + len(end) + itemOverhead
	}
	t.buf.Ascend(func(w write) bool {
		key := s.data + string(w.key)
		if w.deleted {
			ops = append(ops, clientv3.OpDelete(key))
		} else {
			ops = append(ops, clientv3.OpPut(key, string(w.value)))
		}
		bytes += len(key) + len(w.value) + itemOverhead
		return true
	})
	if len(ops) > s.opts.MaxTxnOps || len(cmps) > s.opts.MaxTxnOps {
		return false, fmt.Errorf("etcdkv: update of %d writes and %d reads: more than etcd's --max-txn-ops %d: %w",
			len(ops), len(cmps), s.opts.MaxTxnOps, ErrTooLarge)
	}
	if bytes > s.opts.MaxRequestBytes {
		return false, fmt.Errorf("etcdkv: update of %d writes and %d reads, about %d bytes: more than etcd's --max-request-bytes %d: %w",
			len(ops), len(cmps), bytes, s.opts.MaxRequestBytes, ErrTooLarge)
	}
	resp, err := s.cli.Txn(ctx).If(cmps...).Then(ops...).Commit()
	if err != nil {
		if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
			err = fmt.Errorf("%w: %w", cerr, err)
		}
		return false, fmt.Errorf("etcdkv: update: commit (outcome unknown): %w", err)
	}
	return resp.Succeeded, nil
}
