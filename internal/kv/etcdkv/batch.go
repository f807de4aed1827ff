package etcdkv

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/google/btree"
	clientv3 "go.etcd.io/etcd/client/v3"

	"tessera/internal/kv"
)

// Group commit. An Update whose fn has run joins the committer's queue.
// One Txn is in flight at a time; while it is, later Updates gather, and
// the next Txn carries every queued one that is independent of the others
// taken with it (natural batching: no timer, bounded by etcd's limits).
// Independent: write sets disjoint, and no member writes a key another
// read or a key inside a range another scanned. The merged Txn's If is the
// union of the members' compares, its Then the union of their operations:
// every compare is evaluated on one state S and every write applied
// atomically after, so each member read what S holds and none read what
// another wrote, which is what running them one after the other in any
// order gives (docs/design/2026-11-25-etcd-group-commit.md).

// committer is the queue of Updates waiting to commit.
type committer struct {
	mu      sync.Mutex
	queue   []*member
	running bool // a goroutine is sending batches
}

// member is one Update waiting in the queue.
type member struct {
	p    *prepared
	ctx  context.Context
	done chan outcome // buffered: the committer never waits for the Update
}

// outcome is what the committer tells a member.
type outcome struct {
	ok    bool  // committed
	alone bool  // the merged If failed: try the member's own compares alone
	err   error // etcd failed (outcome unknown), or nothing was sent
}

// commitGrouped commits t through the committer; it returns as commit
// does.
func (s *Store) commitGrouped(ctx context.Context, t *txn) (bool, error) {
	if t.buf.Len() == 0 {
		return true, nil // read-only: the snapshot was consistent
	}
	p, err := s.prepare(t)
	if err != nil {
		return false, err
	}
	m := &member{p: p, ctx: ctx, done: make(chan outcome, 1)}
	s.gc.mu.Lock()
	s.gc.queue = append(s.gc.queue, m)
	if !s.gc.running {
		s.gc.running = true
		go s.runBatches()
	}
	s.gc.mu.Unlock()
	var o outcome
	select {
	case o = <-m.done:
	case <-ctx.Done():
		select {
		case o = <-m.done:
		default:
			s.gc.mu.Lock()
			i := slices.Index(s.gc.queue, m)
			if i >= 0 {
				s.gc.queue = slices.Delete(s.gc.queue, i, i+1)
			}
			s.gc.mu.Unlock()
			if i >= 0 {
				return false, fmt.Errorf("etcdkv: update: %w (before its commit was sent)", ctx.Err())
			}
			return false, unknownOutcome(ctx, ctx.Err())
		}
	}
	if o.alone {
		// Some member of the batch was stale; this one may not be. Its
		// own compares decide, in a Txn of its own.
		return s.send(ctx, p)
	}
	return o.ok, o.err
}

// runBatches sends batches while Updates are queued.
func (s *Store) runBatches() {
	for {
		s.gc.mu.Lock()
		batch := s.takeBatch()
		if len(batch) == 0 {
			s.gc.running = false
			s.gc.mu.Unlock()
			return
		}
		s.gc.mu.Unlock()
		rev, o := s.sendBatch(batch)
		if o.ok {
			s.gc.mu.Lock()
			s.dropStale(batch, rev)
			s.gc.mu.Unlock()
		}
		for _, m := range batch {
			r := o
			if r.err != nil {
				r.err = unknownOutcome(m.ctx, r.err)
			}
			m.done <- r
		}
	}
}

// takeBatch removes from the queue, oldest first, the members that are
// independent of each other and fit in one Txn; the others stay queued
// in their order. Members whose context ended, or of a closed store, are
// answered without being sent. s.gc.mu is held.
func (s *Store) takeBatch() []*member {
	var (
		batch     []*member
		rest      []*member
		writes    = newKeySet()
		reads     = make(map[string]bool)
		ranges    []span
		cmps, ops int
		bytes     = reqOverhead
		full      bool
		closed    = s.closed.Load()
	)
	for _, m := range s.gc.queue {
		if closed {
			m.done <- outcome{err: fmt.Errorf("etcdkv: update: %w (before its commit was sent)", kv.ErrClosed)}
			continue
		}
		if err := m.ctx.Err(); err != nil {
			m.done <- outcome{err: fmt.Errorf("etcdkv: update: %w (before its commit was sent)", err)}
			continue
		}
		p := m.p
		fits := !full && cmps+len(p.cmps) <= s.opts.MaxTxnOps && ops+len(p.ops) <= s.opts.MaxTxnOps &&
			bytes+p.bytes <= s.opts.MaxRequestBytes
		if !fits {
			full = true // later members wait too: first come, first sent
			rest = append(rest, m)
			continue
		}
		if !independent(p, writes, reads, ranges) {
			rest = append(rest, m)
			continue
		}
		batch = append(batch, m)
		cmps, ops, bytes = cmps+len(p.cmps), ops+len(p.ops), bytes+p.bytes
		for _, k := range p.writes {
			writes.ReplaceOrInsert(k)
		}
		for _, k := range p.reads {
			reads[k] = true
		}
		ranges = append(ranges, p.ranges...)
	}
	s.gc.queue = rest
	return batch
}

// independent reports whether p may join a batch with the given writes,
// reads and ranges: it writes nothing they write, read or scanned, and
// reads and scans nothing they write.
func independent(p *prepared, writes *btree.BTreeG[string], reads map[string]bool, ranges []span) bool {
	for _, k := range p.writes {
		if writes.Has(k) || reads[k] {
			return false
		}
		for _, sp := range ranges {
			if inSpan(k, sp) {
				return false
			}
		}
	}
	for _, k := range p.reads {
		if writes.Has(k) {
			return false
		}
	}
	for _, sp := range p.ranges {
		if anyIn(writes, sp) {
			return false
		}
	}
	return true
}

func inSpan(k string, sp span) bool {
	return k >= string(sp.start) && (sp.end == nil || k < string(sp.end))
}

// sendBatch sends the batch as one Txn. Its context ends at Close or when
// every member's context has ended. It returns the revision the Txn
// committed at and the outcome for the members (an error unwrapped).
func (s *Store) sendBatch(batch []*member) (int64, outcome) {
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	left := int64(len(batch))
	for _, m := range batch {
		stop := context.AfterFunc(m.ctx, func() {
			if atomic.AddInt64(&left, -1) == 0 {
				cancel()
			}
		})
		defer stop()
	}
	ps := make([]*prepared, len(batch))
	var cmps []clientv3.Cmp
	var ops []clientv3.Op
	for i, m := range batch {
		ps[i] = m.p
		cmps = append(cmps, m.p.cmps...)
		ops = append(ops, m.p.ops...)
	}
	s.observe(ps)
	resp, err := s.cli.Txn(clientv3.WithRequireLeader(ctx)).If(cmps...).Then(ops...).Commit()
	switch {
	case err != nil:
		return 0, outcome{err: err}
	case resp.Succeeded:
		return resp.Header.Revision, outcome{ok: true}
	case len(batch) == 1:
		return 0, outcome{} // its own compares failed: a conflict
	default:
		return 0, outcome{alone: true}
	}
}

// dropStale answers the queued members that read or scanned what a batch
// committed at rev wrote, from a snapshot older than rev: their compares
// cannot pass, so their fn runs again without a Txn sent for nothing.
// s.gc.mu is held.
func (s *Store) dropStale(batch []*member, rev int64) {
	written := newKeySet()
	for _, m := range batch {
		for _, k := range m.p.writes {
			written.ReplaceOrInsert(k)
		}
	}
	rest := s.gc.queue[:0]
	for _, m := range s.gc.queue {
		if m.p.rev != 0 && m.p.rev < rev && reads(m.p, written) {
			m.done <- outcome{} // a conflict
			continue
		}
		rest = append(rest, m)
	}
	clear(s.gc.queue[len(rest):])
	s.gc.queue = rest
}

// reads reports whether p read a key of written or scanned a range
// holding one.
func reads(p *prepared, written *btree.BTreeG[string]) bool {
	for _, k := range p.reads {
		if written.Has(k) {
			return true
		}
	}
	for _, sp := range p.ranges {
		if anyIn(written, sp) {
			return true
		}
	}
	return false
}

func newKeySet() *btree.BTreeG[string] { return btree.NewG(8, func(a, b string) bool { return a < b }) }

// anyIn reports whether set holds a key inside sp.
func anyIn(set *btree.BTreeG[string], sp span) bool {
	hit := false
	set.AscendGreaterOrEqual(string(sp.start), func(k string) bool {
		hit = sp.end == nil || k < string(sp.end)
		return false
	})
	return hit
}

// observe shows a commit Txn to the test hook.
func (s *Store) observe(batch []*prepared) {
	if s.hook != nil {
		s.hook(batch)
	}
}
