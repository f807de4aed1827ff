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
// At most Options.InFlight Txns are in flight (default 1); while they
// are, later Updates gather, and the next Txn carries every queued one
// that is independent of the others taken with it and of the batches in
// flight (natural batching: no timer, bounded by etcd's limits).
// Independent: write sets disjoint, and no member writes a key another
// read or a key inside a range another scanned. The merged Txn's If is the
// union of the members' compares, its Then the union of their operations:
// every compare is evaluated on one state S and every write applied
// atomically after, so each member read what S holds and none read what
// another wrote, which is what running them one after the other in any
// order gives (docs/design/2026-11-25-etcd-group-commit.md).

// committer is the queue of Updates waiting to commit.
type committer struct {
	mu    sync.Mutex
	queue []*member
	// inflight are the key sets of the batches in flight (at most
	// Options.InFlight): a queued Update that is not independent of one
	// of them waits for it.
	inflight []*keySets
	senders  int // goroutines sending batches
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
	err   error // nothing was sent (the context ended, the store closed)
	lost  error // the Txn failed in transport: it may have been applied
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
	if s.gc.senders < s.opts.InFlight {
		s.gc.senders++
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
	if o.lost != nil {
		// The batch applied all of its members or none: each finds out
		// alone, by its own fence (resolve.go).
		return s.lost(ctx, p, o.lost)
	}
	return o.ok, o.err
}

// runBatches sends batches while Updates are queued that are independent
// of the batches in flight.
func (s *Store) runBatches() {
	for {
		s.gc.mu.Lock()
		batch, sets := s.takeBatch()
		if len(batch) == 0 {
			s.gc.senders--
			s.gc.mu.Unlock()
			return
		}
		s.gc.inflight = append(s.gc.inflight, sets)
		s.gc.mu.Unlock()
		rev, o := s.sendBatch(batch)
		s.gc.mu.Lock()
		s.gc.inflight = slices.DeleteFunc(s.gc.inflight, func(x *keySets) bool { return x == sets })
		if o.ok {
			s.dropStale(sets, rev)
			for _, m := range batch {
				s.rc.wrote(m.p.wr, rev)
			}
		}
		s.gc.mu.Unlock()
		for _, m := range batch {
			m.done <- o
		}
	}
}

// takeBatch removes from the queue, oldest first, the members that are
// independent of each other and of the batches in flight and fit in one
// Txn; the others stay queued in their order. Members whose context
// ended, or of a closed store, are answered without being sent. It returns
// the batch and its key sets. s.gc.mu is held.
func (s *Store) takeBatch() ([]*member, *keySets) {
	var (
		batch     []*member
		rest      []*member
		sets      = newKeySets()
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
		free := !sets.touches(p)
		for _, f := range s.gc.inflight {
			free = free && !f.touches(p)
		}
		if !free {
			rest = append(rest, m)
			continue
		}
		batch = append(batch, m)
		cmps, ops, bytes = cmps+len(p.cmps), ops+len(p.ops), bytes+p.bytes
		sets.add(p)
	}
	s.gc.queue = rest
	return batch, sets
}

// keySets are the keys a batch writes and reads and the ranges it scanned.
type keySets struct {
	writes *btree.BTreeG[string]
	reads  map[string]bool
	ranges []span
}

func newKeySets() *keySets { return &keySets{writes: newKeySet(), reads: make(map[string]bool)} }

func (ks *keySets) add(p *prepared) {
	for _, k := range p.writes {
		ks.writes.ReplaceOrInsert(k)
	}
	for _, k := range p.reads {
		ks.reads[k] = true
	}
	ks.ranges = append(ks.ranges, p.ranges...)
}

// touches reports whether p is not independent of the batch: it writes
// what the batch writes, read or scanned, or reads or scans what the
// batch writes.
func (ks *keySets) touches(p *prepared) bool {
	for _, k := range p.writes {
		if ks.writes.Has(k) || ks.reads[k] {
			return true
		}
		for _, sp := range ks.ranges {
			if inSpan(k, sp) {
				return true
			}
		}
	}
	return ks.readsWritten(p)
}

// readsWritten reports whether p read a key the batch writes or scanned a
// range holding one.
func (ks *keySets) readsWritten(p *prepared) bool {
	for _, k := range p.reads {
		if ks.writes.Has(k) {
			return true
		}
	}
	for _, sp := range p.ranges {
		if anyIn(ks.writes, sp) {
			return true
		}
	}
	return false
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
		return 0, outcome{lost: err}
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
func (s *Store) dropStale(written *keySets, rev int64) {
	rest := s.gc.queue[:0]
	for _, m := range s.gc.queue {
		if m.p.rev != 0 && m.p.rev < rev && written.readsWritten(m.p) {
			m.done <- outcome{} // a conflict
			continue
		}
		rest = append(rest, m)
	}
	clear(s.gc.queue[len(rest):])
	s.gc.queue = rest
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
