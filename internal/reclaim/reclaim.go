package reclaim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

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
	// DefaultConcurrency bounds the releases being removed at once.
	DefaultConcurrency = 4
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

// Remover is what the reclaimer needs of a block server (block.Lister's
// Remove).
type Remover interface {
	Remove(ctx context.Context, h block.Hash, notAfter int64) (bool, error)
}

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
	// Concurrency bounds the releases being removed at once
	// (DefaultConcurrency when 0).
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
	// gone is set once a removal on this server failed as unavailable:
	// the rest of the round skips it, or a server cut off after the map
	// was read would make every release wait out the block client's
	// budget in turn (the next round asks it again).
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

// removeAll acts on one page of releases with Concurrency workers, then
// drops the finished ones from the log in one transaction.
func (r *Reclaimer) removeAll(ctx context.Context, now time.Time, servers map[string]target, rs []meta.Release) (Report, error) {
	var mu sync.Mutex // guards total, drop and errs
	var total Report
	var drop []meta.Release
	var errs []error
	work := make(chan meta.Release)
	var wg sync.WaitGroup
	for range min(r.cfg.Concurrency, max(len(rs), 1)) {
		wg.Go(func() {
			for rel := range work {
				rep, done, err := r.remove(ctx, now, servers, rel)
				mu.Lock()
				total.add(rep)
				if done {
					drop = append(drop, rel)
				}
				if err != nil {
					errs = append(errs, err)
				}
				mu.Unlock()
			}
		})
	}
	for _, rel := range rs {
		if ctx.Err() != nil {
			break
		}
		work <- rel
	}
	close(work)
	wg.Wait()
	if err := r.cfg.Meta.DropReleases(ctx, drop); err != nil {
		errs = append(errs, err) // listed again next round, removed again: harmless
	}
	return total, errors.Join(errs...)
}

// remove acts on one due release; done reports that it can leave the log.
func (r *Reclaimer) remove(ctx context.Context, now time.Time, servers map[string]target, rel meta.Release) (rep Report, done bool, err error) {
	rep = Report{Due: 1}
	id := releaseID{rel.Hash, rel.At}
	if rel.Refs > 0 {
		rep.Stale = 1
		r.forget(id)
		return rep, true, nil
	}
	r.mu.Lock()
	w := r.mu.waiting[id]
	var ids []string
	if w != nil {
		w.seen = true
		if now.Before(w.next) {
			r.mu.Unlock()
			rep.Waiting = 1
			return rep, false, nil
		}
		ids = w.servers
	}
	r.mu.Unlock()
	if w == nil {
		for sid := range servers {
			ids = append(ids, sid)
		}
	}

	var left []string
	for _, sid := range ids {
		t, ok := servers[sid]
		if !ok {
			continue // left the map: its copies went with it
		}
		if t.rm == nil {
			r.failed(sid, t.err)
			left = append(left, sid)
			continue
		}
		if t.gone.Load() {
			left = append(left, sid) // failed earlier this round: logged then
			continue
		}
		removed, err := t.rm.Remove(ctx, rel.Hash, rel.At)
		if err != nil {
			if ctx.Err() != nil {
				return rep, false, ctx.Err()
			}
			if errors.Is(err, block.ErrUnavailable) {
				t.gone.Store(true)
			}
			r.failed(sid, err)
			left = append(left, sid)
			continue
		}
		r.answered(sid)
		if removed {
			rep.Removed++
		}
	}
	if len(left) == 0 || now.Sub(time.Unix(0, rel.At)) >= r.cfg.GiveUpAfter {
		if len(left) == 0 {
			rep.Done = 1
		} else {
			rep.GaveUp = 1
		}
		r.forget(id)
		return rep, true, nil
	}
	rep.Waiting = 1
	r.mu.Lock()
	defer r.mu.Unlock()
	if w == nil {
		w = &waiting{seen: true}
		r.mu.waiting[id] = w
	}
	w.servers = left
	w.tries++
	w.next = now.Add(min(r.cfg.Poll<<min(w.tries, 16), maxBackoff))
	return rep, false, nil
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
