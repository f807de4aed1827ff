package etcdkv

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/btree"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"tessera/internal/backoff"
	"tessera/internal/clock"
	"tessera/internal/kv"
)

// conflictBackoff spaces the attempts of an Update whose compares
// failed: 1 ms doubling to 100 ms, each wait drawn from [d/2, 3d/2) so
// that transactions that collided do not collide again in lock step.
var conflictBackoff = backoff.Policy{Base: time.Millisecond, Max: 100 * time.Millisecond, Jitter: 0.5}

// leaderBackoff is the wait between the tries of an Update while the
// cluster has no leader: a constant 300 ms drawn from [100 ms, 500 ms).
var leaderBackoff = backoff.Policy{Base: 300 * time.Millisecond, Max: 300 * time.Millisecond, Factor: 1, Jitter: 2.0 / 3}

// Update implements kv.Store; see the package comment.
func (s *Store) Update(ctx context.Context, fn func(tx kv.Txn) error) error {
	conflict := conflictBackoff.Start()
	clk := clock.Or(s.opts.Clock)
	var leaderless time.Time // when answers of "no leader" began
	for attempt := 1; ; attempt++ {
		if err := s.check(ctx); err != nil {
			return fmt.Errorf("etcdkv: update: %w", err)
		}
		t := &txn{
			s: s, ctx: clientv3.WithRequireLeader(ctx), writable: true,
			buf:   btree.NewG(8, writeLess),
			reads: make(map[string]read),
			// After a conflict the snapshot is the latest: the local
			// member lagged, or the key is hot.
			local: (s.opts.LocalUpdateReads || kv.ConsistencyOf(ctx) == kv.Serializable) && attempt == 1,
			// A presumption that failed at commit is not made again.
			presume: attempt == 1,
			// After a conflict fn reads etcd, not the read cache.
			useCache: attempt == 1 && s.rc != nil,
		}
		err := fn(t)
		t.finish()
		ok := false
		switch {
		case err == nil && (t.local || t.cachedReads) && t.buf.Len() == 0:
			// Read only, from the local member or the read cache:
			// current only if its compares pass now.
			ok, err = s.validate(t.ctx, t)
			if errors.Is(err, errTooManyReads) {
				ok, err = false, nil // checked by running fn again at the leader
			}
		case err == nil && s.opts.NoBatch:
			ok, err = s.commit(t.ctx, t)
		case err == nil:
			ok, err = s.commitGrouped(t.ctx, t)
		case t.presumed && t.readErr == nil:
			// fn failed after PresumeAbsent answered without reading:
			// its failure may rest on the guess; it runs again, reading.
			err = nil
		case isCompacted(t.readErr):
			// fn failed on a snapshot etcd compacted away while fn
			// read it: nothing was written; fn runs again on a fresh
			// snapshot, as after a conflict.
			err = nil
		case (t.local || t.cachedReads) && t.readErr == nil:
			// fn failed on what it read from the local member or the
			// read cache: the failure stands only if that is current;
			// else fn runs again on the latest snapshot.
			valid, verr := s.validate(t.ctx, t)
			if errors.Is(verr, errTooManyReads) {
				// Too many reads to check in one Txn: fn runs again,
				// reading at the leader, and its failure then stands.
				valid, verr = false, nil
			}
			if verr != nil || !valid {
				err = verr
			}
		}
		// A commit refused for want of a leader was not proposed, and a
		// transaction that failed on a read wrote nothing: either may run
		// again once the cluster has a leader (elections under load).
		// An outcome unknown never runs fn again.
		if !errors.Is(err, errUnknown) && (isNoLeader(err) || (err != nil && t.readErr != nil && ctx.Err() == nil && isTransient(t.readErr))) {
			// Wait for a leader, up to MajorityWait, then say so.
			if leaderless.IsZero() {
				leaderless = clk.Now()
			} else if clock.Since(clk, leaderless) >= s.opts.MajorityWait {
				return fmt.Errorf("etcdkv: update: no leader for %v: %w (%v)", s.opts.MajorityWait, ErrNoMajority, err)
			}
			attempt-- // not a conflict
			if err := clock.Sleep(ctx, clk, leaderBackoff.Start().Next()); err != nil {
				return fmt.Errorf("etcdkv: update: waiting for an etcd leader: %w", err)
			}
			continue
		}
		leaderless = time.Time{}
		if !ok && t.useCache {
			// A conflict, a failure or an unknown outcome: what t read
			// or wrote may be stale in the read cache.
			s.rc.forget(t)
		}
		if err != nil || ok {
			return err
		}
		if attempt >= s.opts.MaxAttempts {
			return fmt.Errorf("etcdkv: update: %d attempts: %w", attempt, kv.ErrConflict)
		}
		// Randomized so that transactions that collided do not collide
		// again in lock step.
		if err := conflict.Wait(ctx, clk); err != nil {
			return fmt.Errorf("etcdkv: update: %w", err)
		}
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

// prepared is an Update's transaction ready to send: its compares and
// operations, and for the committer what it read and wrote (store keys).
type prepared struct {
	cmps   []clientv3.Cmp
	ops    []clientv3.Op
	bytes  int      // estimated request bytes, without the request's own overhead
	writes []string // keys put or deleted, ascending
	reads  []string // keys read from the snapshot (each has a compare)
	ranges []span   // ranges scanned in the snapshot (each has a compare)
	rev    int64    // the snapshot's revision; 0: nothing was read from etcd
	wr     []write  // the writes, ascending (store keys)
	// fence is the etcd key of the first write whose key was read
	// present, at ModRevision fenceRev with value fenceVal: the Txn's
	// compare on it fails once the Txn applied ("" when there is none;
	// resolve.go).
	fence    string
	fenceRev int64
	fenceVal []byte
}

// Per request and per compare or operation, what etcd's encoding adds
// around keys and values, generously.
const reqOverhead, itemOverhead = 64, 32

// compares adds to p one compare per key t read and per range it scanned.
func (s *Store) compares(t *txn, p *prepared) {
	for k, r := range t.reads {
		key := s.data + k
		p.cmps = append(p.cmps, clientv3.Compare(clientv3.ModRevision(key), "=", r.modRev))
		p.bytes += len(key) + itemOverhead
		p.reads = append(p.reads, k)
	}
	for _, sp := range t.ranges {
		// The oldest revision the range's keys were read at: the
		// snapshot's, or a cached page's (readcache.go).
		rev := t.rev
		if sp.rev != 0 && (rev == 0 || sp.rev < rev) {
			rev = sp.rev
		}
		if rev == 0 {
			continue // nothing was read from etcd
		}
		end := clientv3.GetPrefixRangeEnd(s.data)
		if sp.end != nil {
			end = s.data + string(sp.end)
		}
		start := s.data + string(sp.start)
		p.cmps = append(p.cmps, clientv3.Compare(clientv3.ModRevision(start), "<", rev+1).WithRange(end))
		p.bytes += len(start) + len(end) + itemOverhead
		p.ranges = append(p.ranges, sp)
	}
}

// errTooManyReads: validate cannot check the reads in one Txn.
var errTooManyReads = fmt.Errorf("too many reads to check in one Txn: %w", ErrTooLarge)

// validate reports whether what t read is still current: a read-only Txn
// of its compares, which etcd answers linearizably.
func (s *Store) validate(ctx context.Context, t *txn) (bool, error) {
	if t.rev == 0 && !t.cachedReads {
		return true, nil // nothing was read from etcd
	}
	p := &prepared{rev: t.rev}
	s.compares(t, p)
	if len(p.cmps) > s.opts.MaxTxnOps {
		return false, fmt.Errorf("etcdkv: update of %d reads: more than etcd's --max-txn-ops %d: %w", len(p.cmps), s.opts.MaxTxnOps, errTooManyReads)
	}
	// etcd serves a Txn without operations as a serializable read (at
	// the member, which may lag): a linearizable Get in Then makes the
	// member wait for the leader's read index before it compares.
	barrier := clientv3.OpGet(s.data, clientv3.WithCountOnly())
	resp, err := s.cli.Txn(ctx).If(p.cmps...).Then(barrier).Commit()
	if err != nil {
		return false, fmt.Errorf("etcdkv: update: checking reads of the local member: %w", err)
	}
	return resp.Succeeded, nil
}

// prepare builds t's compares and operations and checks them against
// etcd's limits: ErrTooLarge, naming the limit, when one is exceeded.
func (s *Store) prepare(t *txn) (*prepared, error) {
	p := &prepared{rev: t.rev}
	s.compares(t, p)
	t.buf.Ascend(func(w write) bool {
		key := s.data + string(w.key)
		if w.deleted {
			p.ops = append(p.ops, clientv3.OpDelete(key))
		} else {
			p.ops = append(p.ops, clientv3.OpPut(key, string(w.value)))
		}
		p.bytes += len(key) + len(w.value) + itemOverhead
		p.writes = append(p.writes, string(w.key))
		p.wr = append(p.wr, w)
		if r, ok := t.reads[string(w.key)]; ok && r.present && r.modRev > 0 && p.fence == "" {
			p.fence, p.fenceRev, p.fenceVal = key, r.modRev, r.value
		}
		return true
	})
	if len(p.ops) > s.opts.MaxTxnOps || len(p.cmps) > s.opts.MaxTxnOps {
		return nil, fmt.Errorf("etcdkv: update of %d writes and %d reads: more than etcd's --max-txn-ops %d: %w",
			len(p.ops), len(p.cmps), s.opts.MaxTxnOps, ErrTooLarge)
	}
	if b := reqOverhead + p.bytes; b > s.opts.MaxRequestBytes {
		return nil, fmt.Errorf("etcdkv: update of %d writes and %d reads, about %d bytes: more than etcd's --max-request-bytes %d: %w",
			len(p.ops), len(p.cmps), b, s.opts.MaxRequestBytes, ErrTooLarge)
	}
	return p, nil
}

// commit sends t as one etcd Txn of its own. It returns false when a
// compare failed (a conflict), an error when the Txn is too large or etcd
// failed.
func (s *Store) commit(ctx context.Context, t *txn) (bool, error) {
	if t.buf.Len() == 0 {
		return true, nil // read-only: the snapshot was consistent
	}
	p, err := s.prepare(t)
	if err != nil {
		return false, err
	}
	return s.send(ctx, p)
}

// send sends one prepared transaction alone. When it fails in transport,
// resolve finds out whether etcd applied it.
func (s *Store) send(ctx context.Context, p *prepared) (bool, error) {
	s.observe([]*prepared{p})
	resp, err := s.cli.Txn(ctx).If(p.cmps...).Then(p.ops...).Commit()
	if err != nil {
		return s.lost(ctx, p, err)
	}
	if resp.Succeeded {
		s.rc.wrote(p.wr, resp.Header.Revision)
	}
	return resp.Succeeded, nil
}

// lost is the outcome of p whose Txn failed with err: a Txn refused for
// want of a leader was not proposed (Update waits for one and runs fn
// again); any other failure may have been applied, and resolve finds out.
func (s *Store) lost(ctx context.Context, p *prepared, err error) (bool, error) {
	if isNoLeader(err) {
		return false, fmt.Errorf("etcdkv: update: commit refused: %w", err)
	}
	return s.resolve(ctx, p, err)
}
