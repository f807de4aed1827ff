package etcdkv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"tessera/internal/backoff"
	"tessera/internal/clock"
)

// This file finds out the outcome of a commit whose Txn failed in
// transport (etcd's leader was killed, the connection broke with the Txn
// in flight): etcd may or may not have applied it, and may still apply
// it (a copy of the request inside a member). See
// docs/design/2026-11-29-etcd-unknown-outcome.md.
//
// The fence. A transaction that writes a key it read present at its
// snapshot, with ModRevision m > 0, compares ModRevision(f) = m. Once it
// is applied, f's ModRevision is the Txn's revision (or 0, deleted) and
// can never be m again: revisions only grow. So the same Txn, however
// many copies of it etcd receives (its own, a resend, the client's
// retries), applies at most once, and when it applied, the first change
// of f after m is its own. Such a transaction is resolvable: resend it
// until etcd answers; Succeeded means applied once (by the resend; the
// lost copy can no longer pass); compares failed means it was applied if
// and only if the first change of f after m is a revision at which every
// key it puts holds its value (written at that revision) and every key it
// deletes is absent. A transaction without a fence (every key it writes
// was absent or not read) could apply twice (a key it created, deleted by
// another in between, passes "absent" again): its lost commit stays
// "outcome unknown".

// resolveBackoff spaces the resends of a commit whose outcome is being
// found: 50 ms doubling to 1 s, each wait drawn from [1/2, 3/2) of it.
var resolveBackoff = backoff.Policy{Base: 50 * time.Millisecond, Max: time.Second, Jitter: 0.5}

// errUnknown marks every error whose commit may have been applied:
// Update never runs fn again after one.
var errUnknown = errors.New("outcome unknown")

// unknownOutcome is the error of a commit whose outcome could not be
// found: etcd may have applied it.
func unknownOutcome(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		err = fmt.Errorf("%w: %w", cerr, err)
	}
	return fmt.Errorf("etcdkv: update: commit (%w): %w", errUnknown, err)
}

// resolve finds out whether p, whose Txn failed in transport with cause,
// was applied: true (applied once), false (not applied, and never will
// be: fn runs again as after a conflict), or an "outcome unknown" error
// when p has no fence, ctx ended, or etcd gave no answer (no leader, or
// the history needed was compacted) within Options.MajorityWait.
func (s *Store) resolve(ctx context.Context, p *prepared, cause error) (bool, error) {
	if p.fence == "" {
		return false, unknownOutcome(ctx, fmt.Errorf("no key it writes was read present, so a resend could apply it twice: %w", cause))
	}
	clk := clock.Or(s.opts.Clock)
	since := clk.Now()
	bo := resolveBackoff.Start()
	last := cause
	for {
		if ctx.Err() != nil {
			return false, unknownOutcome(ctx, cause)
		}
		applied, err := s.resendOnce(clientv3.WithRequireLeader(ctx), p)
		if err == nil {
			s.resolved.Add(1)
			return applied, nil
		}
		if s.closed.Load() || (!isTransient(err) && !isNoLeader(err) && !errors.Is(err, errRetry) && ctx.Err() == nil) {
			return false, unknownOutcome(ctx, fmt.Errorf("%w; finding out: %w", cause, err))
		}
		last = err
		if waited := clock.Since(clk, since); waited >= s.opts.MajorityWait {
			return false, unknownOutcome(ctx, fmt.Errorf("%w; etcd gave no answer for %v: %v", cause, waited.Round(time.Millisecond), last))
		}
		if bo.Wait(ctx, clk) != nil {
			return false, unknownOutcome(ctx, cause)
		}
	}
}

// resendOnce sends p again and, when its compares fail, reads whether the
// first change of its fence is its own.
func (s *Store) resendOnce(ctx context.Context, p *prepared) (bool, error) {
	resp, err := s.cli.Txn(ctx).If(p.cmps...).Then(p.ops...).Commit()
	if err != nil {
		return false, err
	}
	if resp.Succeeded {
		return true, nil
	}
	rev, err := s.firstChange(ctx, p.fence, p.fenceRev)
	if err != nil {
		return false, err
	}
	if rev == 0 {
		// The fence is as p read it: p was not applied, and some other
		// compare failed. A copy still inside etcd could pass later if
		// that compare turned true again; the fence's own write, as it
		// was, ends that, and fn runs again.
		return false, s.closeFence(ctx, p)
	}
	return s.appliedAt(ctx, p, rev)
}

// firstChange is the revision of the first change of key after revision
// m, 0 when it has not changed (a linearizable read).
func (s *Store) firstChange(ctx context.Context, key string, m int64) (int64, error) {
	g, err := s.cli.Get(ctx, key)
	if err != nil {
		return 0, err
	}
	if len(g.Kvs) > 0 && g.Kvs[0].ModRevision == m {
		return 0, nil
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for wr := range s.cli.Watch(wctx, key, clientv3.WithRev(m+1)) {
		if err := wr.Err(); err != nil {
			return 0, fmt.Errorf("reading the history of the fence key: %w", err)
		}
		if len(wr.Events) > 0 {
			return wr.Events[0].Kv.ModRevision, nil
		}
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	return 0, errors.New("the watch of the fence key ended without its history")
}

// closeFence rewrites the fence key with the value and lease it has, if
// it is still as p read it, so that no copy of p can pass its compares
// any more. If it changed meanwhile, the caller's next resend decides.
func (s *Store) closeFence(ctx context.Context, p *prepared) error {
	resp, err := s.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(p.fence), "=", p.fenceRev)).
		Then(clientv3.OpPut(p.fence, string(p.fenceVal), clientv3.WithIgnoreLease())).
		Commit()
	if err != nil {
		return err
	}
	if !resp.Succeeded {
		return errFenceMoved
	}
	return nil
}

// errFenceMoved: the fence changed between the read and its closing; the
// resolution asks again. It counts as transient.
var errFenceMoved = fmt.Errorf("fence key changed while being closed: %w", errRetry)

var errRetry = errors.New("try again")

// appliedAt reports whether the Txn at revision rev is p's: every key p
// puts holds p's value written at rev, every key it deletes is absent.
func (s *Store) appliedAt(ctx context.Context, p *prepared, rev int64) (bool, error) {
	ops := make([]clientv3.Op, len(p.wr))
	for i, w := range p.wr {
		ops[i] = clientv3.OpGet(s.data+string(w.key), clientv3.WithRev(rev))
	}
	// A Txn of linearizable Gets: the member waits for the read index.
	resp, err := s.cli.Txn(ctx).Then(ops...).Commit()
	if err != nil {
		return false, fmt.Errorf("reading revision %d: %w", rev, err)
	}
	for i, w := range p.wr {
		kvs := resp.Responses[i].GetResponseRange().GetKvs()
		switch {
		case w.deleted && len(kvs) != 0:
			return false, nil
		case w.deleted:
		case len(kvs) == 0 || kvs[0].ModRevision != rev || !bytes.Equal(kvs[0].Value, w.value):
			return false, nil
		}
	}
	return true, nil
}
