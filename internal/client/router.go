package client

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"tessera/internal/block"
	"tessera/internal/meta"
	"tessera/internal/placement"
)

// Dialer makes a block.Store for a block server of the map.
type Dialer func(s meta.Server) (block.Store, error)

// router sends each block to the servers placement picks for its hash and
// reads it back from the nearest copy (DESIGN §3.2, issue 3):
//
//   - a Put goes to R servers in state up, spread over failure domains: R of
//     the block's R+1 candidates (placement.Candidates of the rendezvous
//     ranking), leaving out the one this client has placed most copies on,
//     or has a backlog to (placement.Choose, lane.load), so that one file's
//     blocks load every server evenly instead of binomially. A server that fails is
//     replaced by the next in rank, so the block still gets R copies when
//     enough servers are up. The write counts as done once a majority of R
//     copies are durable; the others go on in the background and fsync
//     waits for them (replication.wait). A per-site spec places each
//     site's copies among that site's servers and counts sites: a
//     majority of them, each with a majority of its copies (put.go).
//   - a Get asks copies on this host first (a co-located block file), then
//     the block's candidates under the default R (least busy first), then
//     the other servers in rank order, and falls back to the next on a
//     missing, unreachable or corrupt copy: a copy on the last candidate
//     costs at most one cheap miss. With R=1 the two candidates are asked at
//     once. A corrupt copy is reported to its server
//     (which moves it aside) and replaced with the good bytes.
type router struct {
	api  meta.API
	dial Dialer
	log  *slog.Logger
	site string // this client's site (Config.Site); set before use
	// sent and received count block bytes stored on and fetched from
	// the block servers (Client.Stats).
	sent, received atomic.Uint64
	mu             struct {
		sync.RWMutex
		epoch    uint64
		replicas int
		ids      []string // every server in the map
		up       []string // servers taking new blocks
		servers  map[string]meta.Server
		stores   map[string]block.Store
		lanes    map[string]*lane
		anyLocal bool // some server's block files are on this host
	}
}

// lane is this client's traffic to one block server.
type lane struct {
	puts chan struct{} // uploads under way
	gets *fetchSlots   // fetches under way; readers waiting go first
	// busy counts requests queued or in flight; placed counts the copies
	// this client sent there (it grows with the data written, evenly over
	// the servers, so it stays far from overflow).
	busy, placed atomic.Int64
	// rtt is a moving average of the time the server took to answer
	// (nanoseconds; 0 = not measured yet): nearest-site reads (sites.go).
	rtt atomic.Int64
}

// load is the cost placement.Choose compares: copies placed, so that one
// file's blocks end up even on servers of equal speed (a striped read or
// write lasts as long as the server with the most of them), plus the
// requests queued beyond the lane's own depth, so that a server that falls
// behind gets fewer new blocks. (Counting every request in flight made the
// choice follow the noise of transfer times: one server of 8 got 34 of a
// file's 256 blocks, another 27.)
func (l *lane) load() int64 {
	return l.placed.Load() + max(0, l.busy.Load()-uploadsPerServer)
}

// uploadsPerServer bounds the block uploads in flight to one server: more
// only split its link further and push every transfer towards its timeout.
const uploadsPerServer = 4

// fetchesPerServer bounds the block fetches in flight to one server: a
// server serves a reader's queue of fetches about in file order, each at
// (nearly) the full speed of its link, rather than all at a fraction, so the
// block the reader waits for comes first.
const fetchesPerServer = 2

func newRouter(api meta.API, dial Dialer, log *slog.Logger) *router {
	r := &router{api: api, dial: dial, log: log}
	r.mu.stores = make(map[string]block.Store)
	r.mu.servers = make(map[string]meta.Server)
	r.mu.lanes = make(map[string]*lane)
	return r
}

// refresh reloads the server map from the meta service.
func (r *router) refresh(ctx context.Context) error {
	m, err := r.api.Servers(ctx)
	if err != nil {
		return fmt.Errorf("load block-server map: %w", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if m.Epoch == r.mu.epoch && len(r.mu.ids) > 0 {
		return nil
	}
	var ids, up []string
	anyLocal := false
	for _, s := range m.Servers {
		old, known := r.mu.servers[s.ID]
		if st := r.mu.stores[s.ID]; st == nil || !known || old.Addr != s.Addr || old.Dir != s.Dir || old.Host != s.Host {
			st, err := r.dial(s)
			if err != nil {
				return fmt.Errorf("block server %s at %s: %w", s.ID, s.Addr, err)
			}
			r.mu.stores[s.ID] = st
		}
		if r.mu.lanes[s.ID] == nil {
			r.mu.lanes[s.ID] = &lane{puts: make(chan struct{}, uploadsPerServer), gets: newFetchSlots(fetchesPerServer)}
		}
		r.mu.servers[s.ID] = s
		anyLocal = anyLocal || isLocal(r.mu.stores[s.ID])
		ids = append(ids, s.ID)
		if s.State == meta.StateUp || s.State == "" {
			up = append(up, s.ID)
		}
	}
	r.mu.ids, r.mu.up, r.mu.anyLocal = ids, up, anyLocal
	r.mu.replicas = max(m.Replicas, 1)
	r.mu.epoch = m.Epoch
	return nil
}

// upServers returns the number of servers taking new blocks.
func (r *router) upServers() int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.mu.up)
}

// anyLocal reports whether some server of the map keeps its block files on
// this host (a co-located server the client reads directly).
func (r *router) anyLocal() bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.mu.anyLocal
}

// defaultReplicas is the cluster's replication factor.
func (r *router) defaultReplicas() int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return max(r.mu.replicas, 1)
}

type rankedStore struct {
	id    string
	st    block.Store
	local bool
	lane  *lane
}

func isLocal(st block.Store) bool {
	ls, ok := st.(localStore)
	return ok && ls.IsLocal()
}

// ranked returns every server for reading h: copies on this host first,
// then the block's candidates under the default R (placement.Candidates over
// the up servers, where writers put it), least busy first, then the others
// in rendezvous order.
func (r *router) ranked(h block.Hash) []rankedStore {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.site != "" {
		return r.rankedBySiteLocked(h)
	}
	ids := placement.Pick(h, r.mu.ids, len(r.mu.ids))
	cands := placement.Candidates(placement.Pick(h, r.mu.up, len(r.mu.up)), r.domainLocked, r.mu.replicas)
	out := make([]rankedStore, 0, len(ids))
	seen := make(map[string]bool, len(ids))
	add := func(id string) {
		if r.mu.servers[id].State == meta.StateDown || seen[id] {
			return
		}
		seen[id] = true
		st := r.mu.stores[id]
		out = append(out, rankedStore{id: id, st: st, local: isLocal(st), lane: r.mu.lanes[id]})
	}
	for _, id := range ids {
		if isLocal(r.mu.stores[id]) {
			add(id)
		}
	}
	nlocal := len(out)
	for _, id := range cands {
		add(id)
	}
	slices.SortStableFunc(out[nlocal:], func(a, b rankedStore) int {
		return cmp.Compare(a.lane.busy.Load(), b.lane.busy.Load())
	})
	for _, id := range ids {
		add(id)
	}
	return out
}

// domainLocked returns the failure domains of server id; a server without a
// host label is a host of its own.
func (r *router) domainLocked(id string) placement.Domain {
	s := r.mu.servers[id]
	host := s.Host
	if host == "" {
		host = id
	}
	return placement.Domain{Site: s.Site, Rack: s.Rack, Host: host}
}

// localStore is implemented by stores that read block files of this host
// (disk.LocalReader, an in-process disk.Store): their blocks are not worth a
// copy in the disk cache.
type localStore interface{ IsLocal() bool }

// remoteOf is implemented by disk.LocalReader: the server behind the files.
type remoteOf interface{ Remote() block.Store }

// get fetches a verified copy of h; local reports that it came from a block
// file on this host. Corrupt copies met on the way are repaired in the
// background with the good bytes.
//
// alloc (nil: none) gives the buffer a store that can read into one
// (allocGetter) reads the block into; own reports that the result is the
// caller's alone: read through alloc, and no repair holds it.
func (r *router) get(ctx context.Context, h block.Hash, alloc func(n int) []byte) (data []byte, local, own bool, err error) {
	stores := r.ranked(h)
	if len(stores) == 0 {
		return nil, false, false, fmt.Errorf("get block %s: no block server in the map: %w", h.Short(), block.ErrUnavailable)
	}
	var errs []error
	var bad []rankedStore
	failed := func(s rankedStore, err error) {
		if errors.Is(err, block.ErrCorrupt) {
			r.log.Error("corrupt block copy; reading another and repairing this one", "block", h.String(), "server", s.id, "err", err)
			bad = append(bad, s)
		}
		errs = append(errs, fmt.Errorf("server %s: %w", s.id, err))
	}
	found := func(data []byte, mine bool) bool {
		for _, b := range bad {
			go r.repair(h, data, b)
		}
		return mine && len(bad) == 0
	}
	// With one copy on one of two candidates, ask both at once: the miss
	// costs a small answer, not a turn at the back of the other's queue.
	if len(stores) >= 2 && !stores[0].local && !stores[1].local && r.defaultReplicas() == 1 {
		data, i, mine, err := r.getEither(ctx, h, stores[:2], alloc, failed)
		if err == nil {
			own := found(data, mine)
			r.received.Add(uint64(len(data)))
			return data, stores[i].local, own, nil
		}
		stores = stores[2:]
	}
	for _, s := range stores {
		if ctx.Err() != nil {
			break
		}
		data, mine, err := s.lane.get(ctx, s.st, h, alloc)
		if err == nil {
			own := found(data, mine)
			r.received.Add(uint64(len(data)))
			return data, s.local, own, nil
		}
		failed(s, err)
	}
	return nil, false, false, fmt.Errorf("get block %s: %w", h.Short(), errors.Join(errs...))
}

// getEither asks every store for h at once and returns the first good copy
// (and its index), cancelling the others; failed sees the errors met
// before it. Each ask reads into its own buffer from alloc; the others'
// are left to the garbage collector (a cancelled read may still be
// writing to its buffer after getEither returns).
func (r *router) getEither(ctx context.Context, h block.Hash, stores []rankedStore, alloc func(n int) []byte, failed func(rankedStore, error)) ([]byte, int, bool, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type result struct {
		i    int
		data []byte
		mine bool
		err  error
	}
	results := make(chan result, len(stores))
	for i, s := range stores {
		go func() {
			data, mine, err := s.lane.get(ctx, s.st, h, alloc)
			results <- result{i, data, mine, err}
		}()
	}
	for range stores {
		res := <-results
		if res.err == nil {
			return res.data, res.i, res.mine, nil
		}
		failed(stores[res.i], res.err)
	}
	return nil, 0, false, fmt.Errorf("get block %s: no copy on the first servers", h.Short())
}

// get fetches h from st through the lane: queued behind this client's other
// fetches from the server (a reader's before read-ahead, see fetchSlots),
// the local block files excepted. A store that reads into the caller's
// buffer (allocGetter) reads into one from alloc, when given; mine then
// reports that the result is the caller's alone.
func (l *lane) get(ctx context.Context, st block.Store, h block.Hash, alloc func(n int) []byte) (data []byte, mine bool, err error) {
	l.busy.Add(1)
	defer l.busy.Add(-1)
	if !isLocal(st) {
		if err := l.gets.acquire(ctx, urgencyOf(ctx)); err != nil {
			return nil, false, err
		}
		defer l.gets.release()
	}
	start := time.Now()
	if ag, ok := st.(allocGetter); ok && alloc != nil {
		data, err = ag.GetAlloc(ctx, h, alloc)
		mine = err == nil
	} else {
		data, err = st.Get(ctx, h)
	}
	if err == nil {
		l.measured(time.Since(start))
	}
	return data, mine, err
}

// repair replaces a corrupt copy on s with good data. The server moves a
// corrupt file aside when its own read finds it; a copy read directly from
// its files (co-located) is first reported by asking the server to read it.
func (r *router) repair(h block.Hash, good []byte, s rankedStore) {
	ctx := context.Background()
	target := s.st
	if ro, ok := s.st.(remoteOf); ok {
		target = ro.Remote()
		if _, err := target.Get(ctx, h); err == nil {
			return // the server's own read finds the block sound
		}
	}
	if err := target.Put(ctx, h, good); err != nil {
		r.log.Warn("repair of a corrupt copy failed", "block", h.Short(), "server", s.id, "err", err)
		return
	}
	r.log.Info("repaired a corrupt copy", "block", h.Short(), "server", s.id)
}
