package etcdkv

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"tessera/internal/backoff"
	"tessera/internal/clock"
)

// This file holds what a read at a snapshot's revision does when the
// member that answers has not applied that revision yet: the client
// spreads its requests over the members, so the reads of one snapshot
// meet members at different points of the log. See
// docs/design/2026-11-28-etcd-reads.md.

// lagBackoff spaces the tries of a read at a revision that the members
// asked have not applied, or that found no leader: 10 ms doubling to
// 500 ms, each wait drawn from [d/2, 3d/2).
var lagBackoff = backoff.Policy{Base: 10 * time.Millisecond, Max: 500 * time.Millisecond, Jitter: 0.5}

// readAt reads key (with opts, which name no revision) at revision rev,
// which some member has applied, so the cluster has committed it; see
// retryAtRev for what it does when the member asked has not.
func (s *Store) readAt(ctx context.Context, rev int64, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	at := append(opts[:len(opts):len(opts)], clientv3.WithRev(rev))
	serial := append(at[:len(at):len(at)], clientv3.WithSerializable())
	return retryAtRev(ctx, s, rev, func(ctx context.Context, linear bool) (*clientv3.GetResponse, error) {
		if linear {
			return s.cli.Get(ctx, key, at...)
		}
		return s.cli.Get(ctx, key, serial...)
	})
}

// readOpsAt is readAt for several reads in one read-only Txn (build makes
// them, given the options that pick the revision and the consistency):
// etcd serves it at the member when every read in it is serializable,
// else after the leader's read index.
func (s *Store) readOpsAt(ctx context.Context, rev int64, build func(opts ...clientv3.OpOption) []clientv3.Op) (*clientv3.TxnResponse, error) {
	at := build(clientv3.WithRev(rev))
	serial := build(clientv3.WithRev(rev), clientv3.WithSerializable())
	return retryAtRev(ctx, s, rev, func(ctx context.Context, linear bool) (*clientv3.TxnResponse, error) {
		if linear {
			return s.cli.Txn(ctx).Then(at...).Commit()
		}
		return s.cli.Txn(ctx).Then(serial...).Commit()
	})
}

// retryAtRev runs a read at revision rev, which some member has applied,
// so the cluster has committed it. It asks first at whichever member the
// client picks, serializable (ask with linear false); a member that has
// not applied rev refuses (future revision), and retryAtRev asks again
// linearizably (linear true, with a context requiring a leader, so that a
// member without one says so at once instead of letting the read wait):
// the member that answers then waits until it has applied the leader's
// commit index, which covers rev. When that finds no leader (or no member
// answers), it asks serializably again (another member may have rev, or
// the lagging one may catch up) and then linearizably, with backoff on
// s's clock, until Options.MajorityWait has passed since the first
// refusal; then it fails with ErrNoMajority. Other errors are returned as
// they are: reads never surface member lag as an error before then.
func retryAtRev[R any](ctx context.Context, s *Store, rev int64, ask func(ctx context.Context, linear bool) (R, error)) (R, error) {
	resp, err := ask(ctx, false)
	if err == nil || !isFutureRev(err) {
		return resp, err
	}
	s.lagged.Add(1)
	clk := clock.Or(s.opts.Clock)
	since := clk.Now()
	wait := lagBackoff.Start()
	for {
		resp, err = ask(clientv3.WithRequireLeader(ctx), true)
		if err == nil || !retryLag(ctx, err) {
			return resp, err
		}
		resp, err = ask(ctx, false)
		if err == nil || !retryLag(ctx, err) {
			return resp, err
		}
		if waited := clock.Since(clk, since); waited >= s.opts.MajorityWait {
			var zero R
			return zero, fmt.Errorf("no member has applied revision %d and none has a leader after %v: %w (%w)",
				rev, waited.Round(time.Millisecond), ErrNoMajority, err)
		}
		if err := wait.Wait(ctx, clk); err != nil {
			var zero R
			return zero, fmt.Errorf("waiting for a member with revision %d: %w", rev, err)
		}
	}
}

// retryLag reports whether a read at a revision failed for a reason that
// passes: the member lags, has no leader, or could not be reached.
func retryLag(ctx context.Context, err error) bool {
	return ctx.Err() == nil && (isFutureRev(err) || isTransient(err))
}

func isFutureRev(err error) bool {
	return errors.Is(err, rpctypes.ErrFutureRev) || strings.Contains(err.Error(), rpctypes.ErrorDesc(rpctypes.ErrFutureRev))
}

// isCompacted reports whether a read named a revision etcd has compacted
// away: the snapshot can no longer be read, and its transaction must run
// again on a fresh one.
func isCompacted(err error) bool {
	return err != nil && (errors.Is(err, rpctypes.ErrCompacted) || strings.Contains(err.Error(), rpctypes.ErrorDesc(rpctypes.ErrCompacted)))
}
