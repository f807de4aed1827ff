package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"tessera/internal/block"
	"tessera/internal/placement"
)

// The upload of one block (DESIGN §3.2, issue 13): the spec's groups (one
// for a number of copies, one per named site) upload in parallel, each
// after its own look for existing copies (holders), so that a slow or
// cut-off site delays only its own copies; the put answers once a majority
// of the groups count.

// target is the copies of one group of a block's spec (a site's, or all of
// them for a number): how many (n: K, or fewer when the group has fewer up
// servers), how many must be durable for the group to count (a majority of
// n), and the substitutes for a copy that fails (the rest of the group's
// servers in rank order, guarded by spareMu once the copies run).
type target struct {
	g       placement.Group
	n, need int
	spareMu sync.Mutex
	spare   []rankedStore
	// ok and pending are the put's tally, kept by its answering goroutine
	// only.
	ok, pending int
}

// groupsFor returns the targets of spec's groups for h, sized from the up
// servers of each group.
func (r *router) groupsFor(h block.Hash, spec placement.Spec) []*target {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []*target
	for _, g := range spec.Groups() {
		n := min(g.K, len(placement.InGroup(r.mu.up, r.domainLocked, g)))
		out = append(out, &target{g: g, n: n, need: n/2 + 1, pending: n})
	}
	return out
}

// targets returns the up servers for a new block's copies in group g: of
// the group's servers (rendezvous within its site), k of its k+1
// candidates, spread over failure domains, leaving out the one this client
// loaded most (lane.load, placement.Choose) — but never one that holds the
// block already (held), so that writing a block again stores no new copy
// (dedup); then the rest of the group in rank order as substitutes. The
// picks are claimed on their lanes at once, so that the next block's
// choice sees them.
func (r *router) targets(h block.Hash, g placement.Group, held map[string]bool) (first, spare []rankedStore) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	ranked := placement.InGroup(placement.Pick(h, r.mu.up, len(r.mu.up)), r.domainLocked, g)
	cands := placement.Candidates(ranked, r.domainLocked, g.K)
	cost := func(id string) int64 {
		if held[id] {
			return -1
		}
		return r.mu.lanes[id].load()
	}
	picked := placement.Choose(cands, r.domainLocked, g.K, cost, placement.TieKey(h))
	store := func(id string) rankedStore {
		return rankedStore{id: id, st: r.mu.stores[id], lane: r.mu.lanes[id]}
	}
	for _, id := range picked {
		s := store(id)
		s.lane.busy.Add(1)
		s.lane.placed.Add(1)
		first = append(first, s)
	}
	for _, id := range ranked {
		if !slices.Contains(picked, id) {
			spare = append(spare, store(id))
		}
	}
	return first, spare
}

// holdersTimeout bounds the look for existing copies before an upload: a
// slow answer only costs dedup, never the write.
const holdersTimeout = time.Second

// holders returns which of the block's candidates in group g already hold
// it, when the writer has a choice among them (more candidates than
// copies): the same content written again then goes where it is, and no
// server gains a copy it does not need. One batch "has" per candidate, in
// parallel; errors count as "not held". The block is still put to the
// holders (a Put of a block already held sends it but only refreshes the
// copy's time): a copy found here may be one the reclaimer is about to
// remove (its last recipe entry went), and it spares only copies written
// after the release, so skipping the upload would commit a block that may
// be gone (TestRewriteAfterReleaseSurvivesReclaim).
func (r *router) holders(ctx context.Context, h block.Hash, g placement.Group) map[string]bool {
	r.mu.RLock()
	ranked := placement.InGroup(placement.Pick(h, r.mu.up, len(r.mu.up)), r.domainLocked, g)
	cands := placement.Candidates(ranked, r.domainLocked, g.K)
	stores := make([]block.Store, len(cands))
	lanes := make([]*lane, len(cands))
	for i, id := range cands {
		stores[i], lanes[i] = r.mu.stores[id], r.mu.lanes[id]
	}
	r.mu.RUnlock()
	if len(cands) <= g.K {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, holdersTimeout)
	defer cancel()
	has := make([]bool, len(cands))
	var wg sync.WaitGroup
	for i, st := range stores {
		wg.Go(func() {
			start := time.Now()
			if ok, err := st.Has(ctx, []block.Hash{h}); err == nil && len(ok) == 1 {
				has[i] = ok[0]
				lanes[i].measured(time.Since(start))
			}
		})
	}
	wg.Wait()
	held := make(map[string]bool)
	for i, id := range cands {
		if has[i] {
			held[id] = true
		}
	}
	return held
}

// replication is the fate of one block's copies: wait returns once every
// copy was tried (fsync's "all live replicas").
type replication struct {
	done chan struct{}
	err  error // set before done is closed when fewer than all copies landed
}

func (p *replication) wait(ctx context.Context) error {
	select {
	case <-p.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// errNoTarget stands for a copy a group could not place (its servers
// changed between sizing and picking).
var errNoTarget = errors.New("no server left in the group")

// put stores the copies spec asks for (a zero spec: the cluster's default
// number), uploading to every group (site) in parallel. It returns once a
// majority of the groups count, each with a majority of its copies durable
// (for a number, the one group: a majority of the copies; for
// "a:1,b:1,c:1", two of the three sites), or fails when that became
// impossible: a site that cannot be reached never counts. The returned
// replication completes when every copy has been tried; the copies left go
// on in the background meanwhile, and data must stay unchanged until then.
func (r *router) put(ctx context.Context, h block.Hash, data []byte, spec placement.Spec) (*replication, error) {
	if spec.IsZero() {
		spec = placement.Copies(r.defaultReplicas())
	}
	groups := r.groupsFor(h, spec)
	n := 0
	for _, t := range groups {
		n += t.n
	}
	if n == 0 {
		return nil, fmt.Errorf("put block %s: no block server is up for replicas %s: %w", h.Short(), spec, block.ErrUnavailable)
	}
	needGroups := len(groups)/2 + 1
	type result struct {
		t   *target
		id  string
		err error
	}
	results := make(chan result, n)
	// Each copy tries its server, then its group's spares in rank order,
	// and reports once.
	copyTo := func(t *target, s rankedStore) {
		for {
			s.lane.puts <- struct{}{}
			err := s.st.Put(context.WithoutCancel(ctx), h, data)
			<-s.lane.puts
			s.lane.busy.Add(-1)
			if err == nil {
				r.sent.Add(uint64(len(data)))
				results <- result{t, s.id, nil}
				return
			}
			t.spareMu.Lock()
			if len(t.spare) == 0 {
				t.spareMu.Unlock()
				results <- result{t, s.id, err}
				return
			}
			r.log.Warn("block copy failed; trying another server", "block", h.Short(), "server", s.id, "next", t.spare[0].id, "err", err)
			s, t.spare = t.spare[0], t.spare[1:]
			t.spareMu.Unlock()
			s.lane.busy.Add(1)
			s.lane.placed.Add(1)
		}
	}
	for _, t := range groups {
		if t.n == 0 {
			continue
		}
		go func() {
			first, spare := r.targets(h, t.g, r.holders(context.WithoutCancel(ctx), h, t.g))
			for _, s := range first[min(t.n, len(first)):] { // the map changed meanwhile
				s.lane.busy.Add(-1)
				s.lane.placed.Add(-1)
			}
			first = first[:min(t.n, len(first))]
			for range t.n - len(first) {
				results <- result{t, "site " + t.g.Site, errNoTarget}
			}
			t.spareMu.Lock()
			t.spare = spare
			t.spareMu.Unlock()
			for _, s := range first {
				go copyTo(t, s)
			}
		}()
	}
	rep := &replication{done: make(chan struct{})}
	answer := make(chan error, 1)
	go func() {
		ok, answered := 0, false
		var errs []error
		// tally counts the groups holding a majority of their copies
		// and those that still may.
		tally := func() (c, p int) {
			for _, t := range groups {
				switch {
				case t.n > 0 && t.ok >= t.need:
					c++
					p++
				case t.n > 0 && t.ok+t.pending >= t.need:
					p++
				}
			}
			return c, p
		}
		if _, p := tally(); p < needGroups {
			answered = true
			answer <- fmt.Errorf("put block %s: %s: fewer than a majority have servers up: %w", h.Short(), spread(spec), block.ErrUnavailable)
		}
		for range n {
			res := <-results
			res.t.pending--
			if res.err != nil {
				errs = append(errs, fmt.Errorf("server %s: %w", res.id, res.err))
			} else {
				ok++
				res.t.ok++
			}
			if answered {
				continue
			}
			switch c, p := tally(); {
			case c >= needGroups:
				answered = true
				answer <- nil
			case p < needGroups:
				answered = true
				answer <- fmt.Errorf("put block %s: a majority of %s is out of reach (%d of %d copies failed): %w",
					h.Short(), spread(spec), len(errs), n, errors.Join(errs...))
			}
		}
		if ok < n {
			rep.err = fmt.Errorf("put block %s: %d of %d copies: %w", h.Short(), ok, n, errors.Join(errs...))
		}
		if !answered {
			answer <- rep.err
		}
		close(rep.done)
	}()
	return rep, <-answer
}

// spread names what a put needs a majority of, for errors.
func spread(spec placement.Spec) string {
	if len(spec.Sites) == 0 {
		return fmt.Sprintf("%d copies", spec.N)
	}
	return fmt.Sprintf("the sites of replicas %s", spec)
}
