package scrub

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"tessera/internal/clock"
	"time"

	"tessera/internal/block"
)

// Defaults of Config.
const (
	DefaultRate     = 8 << 20 // bytes per second: a 1 TB store in about 35 hours
	DefaultInterval = time.Hour
)

// Store is what a Scrubber needs of a block store (disk.Store has it).
type Store interface {
	List(ctx context.Context, fn func(block.Info) error) error
	block.Checker
}

// Config configures a Scrubber; Store is required.
type Config struct {
	Store Store
	// Rate bounds the bytes verified per second (DefaultRate when 0; a
	// negative Rate means unlimited).
	Rate int64
	// Interval is the least time between the starts of two rounds
	// (DefaultInterval when 0).
	Interval time.Duration
	// Now is the clock (time.Now when nil); Sleep waits for d or until ctx
	// is done (a timer when nil).
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error
	// Logger receives one line per corrupt copy and per round that found
	// one; nil discards.
	Logger *slog.Logger
}

// Progress is a Scrubber's report, as GET /v1/scrub serves it.
type Progress struct {
	Rate    int64  `json:"rate"`    // bytes per second, negative: unlimited
	Rounds  uint64 `json:"rounds"`  // rounds completed
	Running bool   `json:"running"` // a round is under way
	// Blocks and Bytes verified in the current round (the last one when
	// none runs).
	Blocks int64 `json:"blocks"`
	Bytes  int64 `json:"bytes"`
	// Corrupt copies found (and moved aside) since the process started.
	Corrupt int64 `json:"corrupt"`
	// LastCorrupt describes the latest of them.
	LastCorrupt string `json:"last_corrupt,omitempty"`
	// Err is the last round's error other than corruption (a failed
	// listing), if any.
	Err string `json:"error,omitempty"`
}

// Scrubber verifies a store's blocks in rounds. Run loops; Round runs one.
type Scrubber struct {
	cfg Config
	log *slog.Logger

	mu sync.Mutex // guards p
	p  Progress
}

// New returns a Scrubber with cfg's defaults filled in.
func New(cfg Config) *Scrubber {
	if cfg.Rate == 0 {
		cfg.Rate = DefaultRate
	}
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Sleep == nil {
		cfg.Sleep = sleepCtx
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Scrubber{cfg: cfg, log: log, p: Progress{Rate: cfg.Rate}}
}

// Progress returns the report as of now.
func (s *Scrubber) Progress() Progress {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.p
}

// Run runs a round at once, then one every Interval (or as soon as the
// previous one ended, if it took longer), until ctx is done.
func (s *Scrubber) Run(ctx context.Context) {
	for {
		start := s.cfg.Now()
		if err := s.Round(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("scrub round", "err", err)
		}
		if ctx.Err() != nil {
			return
		}
		if wait := s.cfg.Interval - s.cfg.Now().Sub(start); wait > 0 {
			if s.cfg.Sleep(ctx, wait) != nil {
				return
			}
		}
	}
}

// Round verifies every block the store lists once, paced to Rate. Corrupt
// copies are counted and moved aside by the store; they do not fail the
// round. The error is the listing's or ctx's.
func (s *Scrubber) Round(ctx context.Context) error {
	s.mu.Lock()
	s.p.Running, s.p.Blocks, s.p.Bytes, s.p.Err = true, 0, 0, ""
	s.mu.Unlock()
	var infos []block.Info
	err := s.cfg.Store.List(ctx, func(info block.Info) error {
		infos = append(infos, info)
		return nil
	})
	start := s.cfg.Now()
	var done int64 // bytes verified this round
	found := 0
	for _, info := range infos {
		if err != nil {
			break
		}
		if s.cfg.Rate > 0 {
			due := start.Add(time.Duration(float64(done) / float64(s.cfg.Rate) * float64(time.Second)))
			if wait := due.Sub(s.cfg.Now()); wait > 0 {
				if err = s.cfg.Sleep(ctx, wait); err != nil {
					break
				}
			}
		}
		cerr := s.cfg.Store.Check(ctx, info.Hash, true)
		switch {
		case cerr == nil:
		case errors.Is(cerr, block.ErrNotFound):
			continue // removed since the listing
		case errors.Is(cerr, block.ErrCorrupt):
			found++
			s.log.Error("scrub: corrupt copy moved aside; the mover restores it from a good copy", "block", info.Hash, "err", cerr)
			s.mu.Lock()
			s.p.Corrupt++
			s.p.LastCorrupt = cerr.Error()
			s.mu.Unlock()
		case ctx.Err() != nil:
			err = ctx.Err()
			continue
		default:
			s.log.Warn("scrub: cannot check a block", "block", info.Hash, "err", cerr)
			continue
		}
		done += info.Size
		s.mu.Lock()
		s.p.Blocks++
		s.p.Bytes += info.Size
		s.mu.Unlock()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.p.Running = false
	if err == nil {
		s.p.Rounds++
		if found > 0 {
			s.log.Warn("scrub round found corrupt copies", "round", s.p.Rounds, "corrupt", found, "blocks", s.p.Blocks)
		}
	} else if ctx.Err() == nil {
		s.p.Err = err.Error()
	}
	return err
}

// sleepCtx sleeps for d on the real clock, or until ctx is done.
func sleepCtx(ctx context.Context, d time.Duration) error { return clock.Sleep(ctx, nil, d) }
