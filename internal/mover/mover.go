package mover

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"tessera/internal/block"
	"tessera/internal/meta"
	"tessera/internal/placement"
)

// Defaults of Config.
const (
	DefaultInterval    = 5 * time.Second
	DefaultRate        = 64 << 20 // bytes per second
	DefaultConcurrency = 4
	// epochPoll is how often Run looks at the map's epoch between rounds.
	epochPoll = time.Second
)

// BlockServer is what the mover needs of a block server (admin.BlockServer
// has the same shape).
type BlockServer interface {
	block.Store
	block.Lister
}

// Meta is what the mover needs of the meta service: *meta.Service has it.
type Meta interface {
	Servers(ctx context.Context) (meta.ServerMap, error)
	GetAttr(ctx context.Context, ino meta.Ino) (meta.Inode, error)
	WalkBlocks(ctx context.Context, fn func(ino meta.Ino, index uint64, h block.Hash) error) error
	MoverProgress(ctx context.Context) (meta.MoverProgress, error)
	PutMoverProgress(ctx context.Context, p meta.MoverProgress) error
}

// Step is one completed move, for Config.AfterStep.
type Step struct {
	Kind   string // "copy" or "remove"
	Hash   block.Hash
	Server string // the copy's destination, or the server the copy left
}

// Config configures a Mover; Meta and Dial are required.
type Config struct {
	Meta Meta
	Dial func(meta.Server) (BlockServer, error)
	// Interval between rounds (DefaultInterval when 0).
	Interval time.Duration
	// Rate limits copies in bytes per second (DefaultRate when 0; negative:
	// unlimited).
	Rate int64
	// Concurrency bounds the blocks being moved at once (DefaultConcurrency
	// when 0).
	Concurrency int
	// Now is the clock (time.Now when nil); Sleep waits (a timer when nil).
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error
	// ReportEvery is how often a round reports progress while it runs (1 s
	// when 0).
	ReportEvery time.Duration
	// AfterStep, if set, is called after every copy and removal, from the
	// goroutine that made it (tests check invariants there).
	AfterStep func(Step)
	Logger    *slog.Logger
}

// Mover runs rounds. Round may be called directly (tests); Run loops.
type Mover struct {
	cfg    Config
	bucket *bucket
	log    *slog.Logger
	rounds uint64 // rounds completed; owned by the goroutine calling Round
	// firstShort is when each block short at a site was first seen short
	// (site -> hash -> unix ns), kept from round to round for the blocks
	// still short; since is the oldest per site. Owned like rounds.
	firstShort map[string]map[block.Hash]int64
	since      map[string]int64
}

// New returns a Mover with cfg's defaults filled in.
func New(cfg Config) *Mover {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Rate == 0 {
		cfg.Rate = DefaultRate
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = DefaultConcurrency
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Sleep == nil {
		cfg.Sleep = sleepCtx
	}
	if cfg.ReportEvery <= 0 {
		cfg.ReportEvery = time.Second
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Mover{cfg: cfg, bucket: newBucket(cfg.Rate, cfg.Now, cfg.Sleep), log: log}
}

// Run runs rounds every Interval, and one soon after the map's epoch
// changes, until ctx is done. Round numbers continue from the stored
// progress.
func (m *Mover) Run(ctx context.Context) {
	if p, err := m.cfg.Meta.MoverProgress(ctx); err == nil {
		m.rounds = p.Round
	}
	poll := time.NewTicker(min(epochPoll, m.cfg.Interval))
	defer poll.Stop()
	var lastEpoch uint64
	var lastRound time.Time
	first := true
	for {
		select {
		case <-ctx.Done():
			return
		case <-poll.C:
		}
		sm, err := m.cfg.Meta.Servers(ctx)
		if err != nil {
			continue
		}
		if !first && sm.Epoch == lastEpoch && m.cfg.Now().Sub(lastRound) < m.cfg.Interval {
			continue
		}
		first, lastEpoch, lastRound = false, sm.Epoch, m.cfg.Now()
		p, err := m.Round(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			m.log.Warn("mover round", "round", p.Round, "err", err)
		case p.BytesMoved > 0 || p.UnderReplicated > 0 || p.Misplaced > 0:
			m.log.Info("mover round", "round", p.Round, "blocks", p.Blocks, "moved_bytes", p.BytesMoved,
				"under_replicated", p.UnderReplicated, "misplaced", p.Misplaced)
		}
	}
}

// Round runs one round: plan, copy, remove, report. It returns the final
// report (also stored) and the round's errors joined; a failed copy or
// removal does not stop the others.
func (m *Mover) Round(ctx context.Context) (meta.MoverProgress, error) {
	tasks, st, servers, err := m.plan(ctx)
	if err == nil {
		m.noteShort(st.ShortBySite)
	}
	p := meta.MoverProgress{Round: m.rounds, At: m.cfg.Now().UnixNano(), Running: err == nil,
		Blocks: st.Blocks, UnderReplicated: st.UnderReplicated, Misplaced: st.Misplaced, BytesToMove: st.BytesToMove,
		Lost: st.Lost, UnderBySite: siteCounts(st.UnderBySite, st.UnderBytesBySite, m.since)}
	if err == nil && st.Lost > 0 {
		p.LostBlocks, err = m.lostFiles(ctx, st.LostHashes)
	}
	if err == nil {
		m.report(ctx, p)
		var ex *execution
		ex, err = m.execute(ctx, tasks, st, servers, p)
		p = ex.progress()
	}
	m.rounds++
	p.Round, p.Running, p.At = m.rounds, false, m.cfg.Now().UnixNano()
	if err != nil {
		p.Err = err.Error()
	}
	m.report(ctx, p)
	return p, err
}

// noteShort records when each block short at a site was first seen short
// (now, for the ones new this round; the ones no longer short are
// forgotten), and the oldest per site: the site's replication lag. A
// mover that just became the leader starts its ages afresh.
func (m *Mover) noteShort(short map[string][]block.Hash) {
	now := m.cfg.Now().UnixNano()
	first := make(map[string]map[block.Hash]int64, len(short))
	since := make(map[string]int64, len(short))
	for site, hs := range short {
		old := m.firstShort[site]
		cur := make(map[block.Hash]int64, len(hs))
		oldest := now
		for _, h := range hs {
			t, ok := old[h]
			if !ok {
				t = now
			}
			cur[h] = t
			oldest = min(oldest, t)
		}
		first[site], since[site] = cur, oldest
	}
	m.firstShort, m.since = first, since
}

// report stores p; a failure is logged, not fatal.
func (m *Mover) report(ctx context.Context, p meta.MoverProgress) {
	if err := m.cfg.Meta.PutMoverProgress(ctx, p); err != nil && ctx.Err() == nil {
		m.log.Warn("mover progress", "err", err)
	}
}

// plan gathers the live blocks and the holdings and plans the round. It
// fails when the meta service fails; servers that cannot be listed are left
// out (nothing is removed on their account) and reported in the error
// after the round.
func (m *Mover) plan(ctx context.Context) ([]Task, Stats, *serverSet, error) {
	sm, err := m.cfg.Meta.Servers(ctx)
	if err != nil {
		return nil, Stats{}, nil, fmt.Errorf("block-server map: %w", err)
	}
	live, err := m.liveBlocks(ctx, sm.Replicas)
	if err != nil {
		return nil, Stats{}, nil, err
	}
	servers := &serverSet{byID: map[string]meta.Server{}, stores: map[string]BlockServer{}}
	held := Holdings{}
	for _, s := range sm.Servers {
		servers.byID[s.ID] = s
		if s.State == meta.StateDown {
			continue
		}
		bs, err := m.cfg.Dial(s)
		if err != nil {
			servers.errs = append(servers.errs, fmt.Errorf("dial %s: %w", s.ID, err))
			continue
		}
		have := map[block.Hash]int64{}
		err = bs.List(ctx, func(info block.Info) error {
			if _, ok := live[info.Hash]; ok {
				have[info.Hash] = info.Size
			}
			return nil
		})
		if err != nil {
			servers.errs = append(servers.errs, fmt.Errorf("list %s: %w", s.ID, err))
			continue
		}
		servers.stores[s.ID] = bs
		held[s.ID] = have
	}
	tasks, st := PlanSpecs(sm, held, live)
	return tasks, st, servers, nil
}

// liveBlocks returns every block a recipe refers to with its replication
// spec: its inodes' specs merged (placement.Merge: the most copies per
// site, the largest number), def copies for inodes that name none.
func (m *Mover) liveBlocks(ctx context.Context, def int) (map[block.Hash]placement.Spec, error) {
	rOf := map[meta.Ino]placement.Spec{} // this round's cache
	live := map[block.Hash]placement.Spec{}
	err := m.cfg.Meta.WalkBlocks(ctx, func(ino meta.Ino, _ uint64, h block.Hash) error {
		r, ok := rOf[ino]
		if !ok {
			r = placement.Copies(max(def, 1))
			in, err := m.cfg.Meta.GetAttr(ctx, ino)
			switch {
			case err == nil && in.Sites != "":
				sp, perr := placement.ParseSpec(in.Sites)
				if perr != nil {
					return fmt.Errorf("inode %d: replicas %q: %w", ino, in.Sites, perr)
				}
				r = sp
			case err == nil && in.Replicas != 0:
				r = placement.Copies(int(in.Replicas))
			case err != nil && !errors.Is(err, meta.ErrNotFound):
				return fmt.Errorf("getattr %d: %w", ino, err)
			}
			rOf[ino] = r
		}
		live[h] = placement.Merge(live[h], r)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("walk recipes: %w", err)
	}
	return live, nil
}

// lostFiles names the inodes whose recipes refer to each of the lost
// blocks (a second walk, only in a round that found some).
func (m *Mover) lostFiles(ctx context.Context, lost []block.Hash) ([]meta.LostBlock, error) {
	idx := make(map[block.Hash]int, len(lost))
	out := make([]meta.LostBlock, len(lost))
	for i, h := range lost {
		idx[h], out[i].Hash = i, h
	}
	err := m.cfg.Meta.WalkBlocks(ctx, func(ino meta.Ino, _ uint64, h block.Hash) error {
		i, ok := idx[h]
		if !ok {
			return nil
		}
		l := &out[i]
		if len(l.Inos) < meta.MaxLostInodes && !slices.Contains(l.Inos, ino) {
			l.Inos = append(l.Inos, ino)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("walk recipes for the files of lost blocks: %w", err)
	}
	return out, nil
}

// serverSet is a round's view of the servers.
type serverSet struct {
	byID   map[string]meta.Server
	stores map[string]BlockServer // the listed ones
	errs   []error
}

// up reports whether server id was up when the round started.
func (s *serverSet) up(id string) bool { return s.byID[id].State == meta.StateUp }
