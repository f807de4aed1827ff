package reclaim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"tessera/internal/backoff"
	"tessera/internal/block"
	"tessera/internal/meta"
)

// Defaults of Config.
const (
	// DefaultAfter is the safety window: a release is acted on this long
	// after it was made. It matches the longest a mount trusts a cached
	// recipe without asking (the relaxed policy's minute).
	DefaultAfter = time.Minute
	// DefaultPoll is the time between rounds.
	DefaultPoll = time.Second
	// DefaultGiveUpAfter is how long a release waits for servers that do
	// not answer before it is left to the full walk (hourly by default).
	DefaultGiveUpAfter = time.Hour
	// DefaultConcurrency bounds the block servers asked at once. Each is
	// asked once per page, so a page costs about one round trip to the
	// farthest server when the map has no more servers than this.
	DefaultConcurrency = 16
)

// page is the number of releases one Meta.Releases call returns.
const page = 256

// maxBackoff bounds the time between retries of a waiting release.
const maxBackoff = time.Minute

// Meta is what the reclaimer needs of the meta service: *meta.Service has
// it.
type Meta interface {
	Servers(ctx context.Context) (meta.ServerMap, error)
	Releases(ctx context.Context, after meta.Release, before int64, limit int) ([]meta.Release, bool, error)
	DropReleases(ctx context.Context, rs []meta.Release) error
}

var _ Meta = (*meta.Service)(nil)

// Remover is what the reclaimer needs of a block server: conditional
// removals in batches, each with its own cutoff (block.BatchRemover; the
// block client sends a batch as one POST /v1/remove, *disk.Store removes
// in process).
type Remover = block.BatchRemover

// Config configures a Reclaimer; Meta and Dial are required.
type Config struct {
	Meta Meta
	Dial func(meta.Server) (Remover, error)
	// After is the safety window (DefaultAfter when 0).
	After time.Duration
	// Poll is the time between Run's rounds (DefaultPoll when 0).
	Poll time.Duration
	// GiveUpAfter is how long after its release a block is retried on
	// servers that do not answer (DefaultGiveUpAfter when 0).
	GiveUpAfter time.Duration
	// Concurrency bounds the block servers being asked at once, each for
	// a page of releases (DefaultConcurrency when 0).
	Concurrency int
	// Now is the clock (time.Now when nil); After waits on it (time.After
	// when nil). Release times are the meta service's clock.
	Now   func() time.Time
	Timer func(time.Duration) <-chan time.Time
	// Logger (discarding when nil).
	Logger *slog.Logger
}

// Report is what a round did.
type Report struct {
	Due     int // releases past the window looked at
	Stale   int // of them, blocks named again: dropped, nothing removed
	Done    int // releases whose block every server has answered for
	Removed int // copies removed
	Waiting int // releases kept for servers that are down or did not answer
	GaveUp  int // releases left to the full walk after GiveUpAfter
}

func (r *Report) add(o Report) {
	r.Due += o.Due
	r.Stale += o.Stale
	r.Done += o.Done
	r.Removed += o.Removed
	r.Waiting += o.Waiting
	r.GaveUp += o.GaveUp
}

// Reclaimer runs rounds. Round may be called directly (tests) or by Run,
// not both at once.
type Reclaimer struct {
	cfg Config
	log *slog.Logger

	// mu guards the retry state, shared by a round's workers.
	mu struct {
		sync.Mutex
		waiting map[releaseID]*waiting
		silent  map[string]bool // servers whose failure was logged, until they answer
	}
}

// releaseID names a release (its key).
type releaseID struct {
	hash block.Hash
	at   int64
}

// waiting is a release kept for servers that did not answer.
type waiting struct {
	servers []string // the servers still to answer
	tries   int
	next    time.Time // not retried before
	seen    bool      // listed by the current round
}

// New returns a Reclaimer with cfg's defaults filled in.
func New(cfg Config) *Reclaimer {
	if cfg.After <= 0 {
		cfg.After = DefaultAfter
	}
	if cfg.Poll <= 0 {
		cfg.Poll = DefaultPoll
	}
	if cfg.GiveUpAfter <= 0 {
		cfg.GiveUpAfter = DefaultGiveUpAfter
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = DefaultConcurrency
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Timer == nil {
		cfg.Timer = time.After
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &Reclaimer{cfg: cfg, log: log}
	r.mu.waiting = map[releaseID]*waiting{}
	r.mu.silent = map[string]bool{}
	return r
}

// Run runs a round every Poll until ctx is done. Errors of the meta
// service are logged at most once a minute.
func (r *Reclaimer) Run(ctx context.Context) {
	var lastWarn time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.cfg.Timer(r.cfg.Poll):
		}
		rep, err := r.Round(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			if now := r.cfg.Now(); now.Sub(lastWarn) >= time.Minute {
				lastWarn = now
				r.log.Warn("reclaim: round failed; retrying", "err", err)
			}
		case rep.Removed > 0 || rep.GaveUp > 0:
			r.log.Debug("reclaim: removed released blocks", "copies", rep.Removed, "releases", rep.Done,
				"stale", rep.Stale, "waiting", rep.Waiting, "gave_up", rep.GaveUp)
		}
	}
}

// Round acts on every release older than the window: it drops those of
// blocks named again, and removes the others from every server of the map.
func (r *Reclaimer) Round(ctx context.Context) (Report, error) {
	now := r.cfg.Now()
	sm, err := r.cfg.Meta.Servers(ctx)
	if err != nil {
		return Report{}, fmt.Errorf("block-server map: %w", err)
	}
	servers := r.dialAll(sm)
	before := now.Add(-r.cfg.After).UnixNano() + 1 // releases at or before now - After

	r.mu.Lock()
	for _, w := range r.mu.waiting {
		w.seen = false
	}
	r.mu.Unlock()

	var total Report
	var errs []error
	after := meta.Release{}
	for {
		rs, more, err := r.cfg.Meta.Releases(ctx, after, before, page)
		if err != nil {
			errs = append(errs, err)
			break
		}
		rep, err := r.removeAll(ctx, now, servers, rs)
		total.add(rep)
		if err != nil {
			errs = append(errs, err)
		}
		if !more || len(rs) == 0 || ctx.Err() != nil {
			break
		}
		after = rs[len(rs)-1]
	}

	r.mu.Lock()
	for id, w := range r.mu.waiting {
		if !w.seen { // dropped by someone else, or not due any more
			delete(r.mu.waiting, id)
		}
	}
	r.mu.Unlock()
	if total.GaveUp > 0 {
		r.log.Warn("reclaim: released blocks left to the full collection: some block servers did not answer for too long",
			"releases", total.GaveUp, "give_up_after", r.cfg.GiveUpAfter)
	}
	return total, errors.Join(errs...)
}

// target is one server of the map as a round sees it.
type target struct {
	server meta.Server
	rm     Remover // nil when down or not dialable
	err    error   // why rm is nil
	// gone is set once a batch of removals on this server failed as
	// unavailable: the rest of the round skips it, or a server cut off
	// after the map was read would make every page wait out the block
	// client's budget in turn (the next round asks it again).
	gone *atomic.Bool
}

// dialAll dials every server of the map that is not down.
func (r *Reclaimer) dialAll(sm meta.ServerMap) map[string]target {
	out := make(map[string]target, len(sm.Servers))
	for _, s := range sm.Servers {
		t := target{server: s, gone: new(atomic.Bool)}
		if s.State == meta.StateDown {
			t.err = errors.New("server is down")
		} else if t.rm, t.err = r.cfg.Dial(s); t.err != nil {
			t.rm = nil
		}
		out[s.ID] = t
	}
	return out
}

// removeAll acts on one page of releases: it asks each server once for
// all the page's releases it has to answer for (one RemoveMany), at most
// Concurrency servers at once, then settles each release from the answers
// and drops the finished ones from the log in one transaction.
func (r *Reclaimer) removeAll(ctx context.Context, now time.Time, servers map[string]target, rs []meta.Release) (Report, error) {
	var total Report
	var drop []meta.Release
	var todo []*pending
	asks := map[string][]*pending{} // per server, the releases to ask it for
	for _, rel := range rs {
		if p := r.plan(now, servers, rel, &total); p == nil {
			if rel.Refs > 0 {
				drop = append(drop, rel)
			}
		} else {
			todo = append(todo, p)
			for _, sid := range p.ask {
				asks[sid] = append(asks[sid], p)
			}
		}
	}

	// Each server's answers go to its releases (removed, left) under mu.
	var mu sync.Mutex
	sem := make(chan struct{}, r.cfg.Concurrency)
	var wg sync.WaitGroup
	for _, sid := range sortedKeys(asks) {
		ps, t := asks[sid], servers[sid]
		if t.gone.Load() {
			// Failed as unavailable on an earlier page of the round:
			// logged then. (The servers asked already may be answering.)
			mu.Lock()
			for _, p := range ps {
				p.left = append(p.left, sid)
			}
			mu.Unlock()
			continue
		}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			batch := make([]block.Removal, len(ps))
			for i, p := range ps {
				batch[i] = block.Removal{Hash: p.rel.Hash, NotAfter: p.rel.At}
			}
			removed, err := t.rm.RemoveMany(ctx, batch)
			if err == nil && len(removed) != len(batch) {
				err = fmt.Errorf("remove %d blocks: %d answers", len(batch), len(removed))
			}
			if err != nil && ctx.Err() == nil {
				if errors.Is(err, block.ErrUnavailable) {
					t.gone.Store(true)
				}
				r.failed(sid, err)
			} else if err == nil {
				r.answered(sid)
			}
			mu.Lock()
			defer mu.Unlock()
			for i, p := range ps {
				switch {
				case err != nil:
					p.left = append(p.left, sid)
				case removed[i]:
					p.removed++
				}
			}
		})
	}
	wg.Wait()

	var errs []error
	if err := ctx.Err(); err != nil {
		// Answers are missing: the releases stay as they were, for the
		// next round.
		errs = append(errs, err)
		todo = nil
	}
	for _, p := range todo {
		rep, done := r.settle(now, p)
		total.add(rep)
		if done {
			drop = append(drop, p.rel)
		}
	}
	if err := r.cfg.Meta.DropReleases(ctx, drop); err != nil {
		errs = append(errs, err) // listed again next round, removed again: harmless
	}
	return total, errors.Join(errs...)
}

// pending is a due release being removed in a round.
type pending struct {
	rel     meta.Release
	w       *waiting // its retry state, nil on its first try
	ask     []string // the servers to ask
	left    []string // the servers that did not answer
	removed int      // copies removed
}

// plan looks at one due release and returns what to ask for it, or nil
// when nothing is: a block named again (Stale: its release is dropped),
// or one waiting out its backoff. rep counts it as due, and as stale or
// waiting.
func (r *Reclaimer) plan(now time.Time, servers map[string]target, rel meta.Release, rep *Report) *pending {
	rep.Due++
	id := releaseID{rel.Hash, rel.At}
	if rel.Refs > 0 {
		rep.Stale++
		r.forget(id)
		return nil
	}
	p := &pending{rel: rel}
	var ids []string
	r.mu.Lock()
	p.w = r.mu.waiting[id]
	if p.w != nil {
		p.w.seen = true
		if now.Before(p.w.next) {
			r.mu.Unlock()
			rep.Waiting++
			return nil
		}
		ids = p.w.servers
	}
	r.mu.Unlock()
	if p.w == nil {
		ids = sortedKeys(servers)
	}
	for _, sid := range ids {
		t, ok := servers[sid]
		switch {
		case !ok:
			// Left the map: its copies went with it.
		case t.rm == nil:
			r.failed(sid, t.err)
			p.left = append(p.left, sid)
		default:
			p.ask = append(p.ask, sid)
		}
	}
	return p
}

// settle counts what the servers answered for p and reports whether its
// release can leave the log: every server it needed answered, or it is
// older than GiveUpAfter. Otherwise it waits, with a backoff, for the
// servers left.
func (r *Reclaimer) settle(now time.Time, p *pending) (rep Report, done bool) {
	rep.Removed = p.removed
	id := releaseID{p.rel.Hash, p.rel.At}
	if len(p.left) == 0 || now.Sub(time.Unix(0, p.rel.At)) >= r.cfg.GiveUpAfter {
		if len(p.left) == 0 {
			rep.Done = 1
		} else {
			rep.GaveUp = 1
		}
		r.forget(id)
		return rep, true
	}
	rep.Waiting = 1
	r.mu.Lock()
	defer r.mu.Unlock()
	w := p.w
	if w == nil {
		w = &waiting{seen: true}
		r.mu.waiting[id] = w
	}
	slices.Sort(p.left)
	w.servers = p.left
	w.tries++
	w.next = now.Add(backoff.Policy{Base: r.cfg.Poll, Max: maxBackoff}.Delay(w.tries))
	return rep, false
}

// sortedKeys returns m's keys in order: servers are asked, and their
// failures logged, in the same order every round.
func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

// forget drops the retry state of a release.
func (r *Reclaimer) forget(id releaseID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.mu.waiting, id)
}

// failed logs a server's failure once until it answers again.
func (r *Reclaimer) failed(sid string, err error) {
	r.mu.Lock()
	logIt := !r.mu.silent[sid]
	r.mu.silent[sid] = true
	r.mu.Unlock()
	if logIt {
		r.log.Warn("reclaim: block server not reachable; its removals of released blocks wait", "server", sid, "err", err)
	}
}

// answered notes that a server answers (again).
func (r *Reclaimer) answered(sid string) {
	r.mu.Lock()
	was := r.mu.silent[sid]
	delete(r.mu.silent, sid)
	r.mu.Unlock()
	if was {
		r.log.Info("reclaim: block server answers again", "server", sid)
	}
}
