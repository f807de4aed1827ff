package writeback

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"tessera/internal/backoff"
	"tessera/internal/gateway/home"
	"tessera/internal/meta"
)

// Queue is the meta service's side of write-back; *meta.Service
// implements it.
type Queue interface {
	ClaimWriteback(ctx context.Context, req meta.ClaimReq) ([]meta.WBOp, error)
	WritebackDone(ctx context.Context, op meta.WBOp, token string) error
	WritebackFailed(ctx context.Context, op meta.WBOp, cause string, permanent bool, retryAt time.Time) error
	WritebackToken(ctx context.Context, ino meta.Ino) (string, error)
	WritebackStats(ctx context.Context, root meta.Ino) (meta.WBStats, error)
}

// Source reads a file's current content from Tessera.
type Source interface {
	// Open returns the content of file ino and its size; an error
	// matching meta.ErrNotFound when the file is gone.
	Open(ctx context.Context, ino meta.Ino) (io.ReadCloser, int64, error)
}

// Fileset is one fileset an Applier writes back.
type Fileset struct {
	Root meta.Ino
	Home home.Store
	// Conflicts is the policy (meta.Conflicts*; "" is keep-both).
	Conflicts string
	// SyncLag: operations younger than it wait (0: apply at once).
	SyncLag time.Duration
}

// Config sets up an Applier.
type Config struct {
	Queue  Queue
	Source Source
	// Owner names this gateway in its claims.
	Owner string
	// Shard and Shards place this gateway among the live ones.
	Shard, Shards int
	// TTL is a claim's lease (default 30 s).
	TTL time.Duration
	// Batch is how many operations one claim takes (default 64), and
	// Parallel how many are applied at once (default 8).
	Batch, Parallel int
	// Backoff is the first retry's wait, doubling up to MaxBackoff
	// (defaults 100 ms and 30 s).
	Backoff, MaxBackoff time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Applier applies queued operations of filesets to their homes.
type Applier struct {
	cfg     Config
	backoff backoff.Policy // waits before retries
}

// New returns an Applier; Queue, Source and Owner are required.
func New(cfg Config) (*Applier, error) {
	if cfg.Queue == nil || cfg.Source == nil || cfg.Owner == "" {
		return nil, errors.New("writeback: Queue, Source and Owner are required")
	}
	if cfg.TTL <= 0 {
		cfg.TTL = 30 * time.Second
	}
	if cfg.Batch <= 0 {
		cfg.Batch = 64
	}
	if cfg.Parallel <= 0 {
		cfg.Parallel = 8
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = 100 * time.Millisecond
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = 30 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	a := &Applier{cfg: cfg, backoff: backoff.Policy{Base: cfg.Backoff, Max: cfg.MaxBackoff}}
	if err := a.backoff.Check(); err != nil {
		return nil, fmt.Errorf("writeback: Backoff, MaxBackoff: %w", err)
	}
	return a, nil
}

// Result counts what one Step did.
type Result struct {
	Applied, Retry, Failed int
}

// Step claims one batch of fileset f's operations that are due and
// applies them; flush ignores the sync lag. It returns what it did; an
// error only when the queue itself could not be reached.
func (a *Applier) Step(ctx context.Context, f Fileset, flush bool) (Result, error) {
	req := meta.ClaimReq{Root: f.Root, Owner: a.cfg.Owner, Shard: a.cfg.Shard, Shards: a.cfg.Shards,
		TTL: a.cfg.TTL, Limit: a.cfg.Batch}
	if !flush && f.SyncLag > 0 {
		req.Before = a.cfg.Now().Add(-f.SyncLag).UnixNano()
	}
	ops, err := a.cfg.Queue.ClaimWriteback(ctx, req)
	if err != nil {
		return Result{}, err
	}
	var (
		mu   sync.Mutex
		res  Result
		qerr error
		wg   sync.WaitGroup
	)
	sem := make(chan struct{}, a.cfg.Parallel)
	for _, op := range ops {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			token, aerr := a.apply(ctx, f, op)
			var err error
			mu.Lock()
			switch {
			case aerr == nil:
				res.Applied++
			case retryable(aerr):
				res.Retry++
			default:
				res.Failed++
			}
			mu.Unlock()
			switch {
			case aerr == nil:
				err = a.cfg.Queue.WritebackDone(ctx, op, token)
			case retryable(aerr):
				err = a.cfg.Queue.WritebackFailed(ctx, op, meta.Clip(aerr.Error(), meta.MaxCause), false, a.cfg.Now().Add(a.backoff.Delay(int(op.Attempts))))
			default:
				err = a.cfg.Queue.WritebackFailed(ctx, op, meta.Clip(aerr.Error(), meta.MaxCause), true, time.Time{})
			}
			if err != nil {
				mu.Lock()
				qerr = errors.Join(qerr, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return res, qerr
}

// Drain applies fileset f's queue until nothing but operations failed
// for good is left, or ctx ends. wait is called when a step applied
// nothing (operations wait for a retry or another gateway's claim) and
// should sleep a little; progress, if not nil, sees the queue's figures
// after every step.
func (a *Applier) Drain(ctx context.Context, f Fileset, wait func(context.Context) error, progress func(meta.WBStats)) error {
	for {
		st, err := a.cfg.Queue.WritebackStats(ctx, f.Root)
		if err != nil {
			return err
		}
		if progress != nil {
			progress(st)
		}
		if st.Depth == len(st.Failed) {
			return nil
		}
		res, err := a.Step(ctx, f, true)
		if err != nil {
			return fmt.Errorf("drain fileset %d: %w", f.Root, err)
		}
		if res.Applied == 0 {
			if err := wait(ctx); err != nil {
				return fmt.Errorf("drain fileset %d: %w", f.Root, err)
			}
		}
	}
}

// Run applies the filesets' queues as their sync lag allows until ctx
// ends, calling wait between rounds that applied nothing.
func (a *Applier) Run(ctx context.Context, sets func() []Fileset, wait func(context.Context) error) error {
	for {
		applied := 0
		for _, f := range sets() {
			res, err := a.Step(ctx, f, false)
			if err != nil && ctx.Err() == nil {
				// The meta service is away: try again after a wait.
				applied = 0
				break
			}
			applied += res.Applied
		}
		if applied == 0 {
			if err := wait(ctx); err != nil {
				return err
			}
		}
	}
}
