package mover

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"tessera/internal/meta"
)

// maxRoundErrs bounds the errors a round keeps for its report.
const maxRoundErrs = 8

// execution is one round's moves in flight and their running totals.
type execution struct {
	m       *Mover
	servers *serverSet
	base    meta.MoverProgress

	under, misplaced, toMove, moved atomic.Int64

	// mu guards errs, dropped, underSite, underBytes and unreachable.
	mu   sync.Mutex
	errs []error
	// unreachable are the servers that failed as unavailable this round
	// (reach.go).
	unreachable map[string]bool
	dropped     int
	underSite   map[string]int64
	underBytes  map[string]int64
	// since is when each site's oldest missing copy was first seen
	// missing, as of the round's plan.
	since map[string]int64
}

// progress is the report as of now (Running as in base).
func (ex *execution) progress() meta.MoverProgress {
	p := ex.base
	p.UnderReplicated, p.Misplaced = ex.under.Load(), ex.misplaced.Load()
	p.BytesToMove, p.BytesMoved = max(ex.toMove.Load(), 0), ex.moved.Load()
	ex.mu.Lock()
	p.UnderBySite = siteCounts(ex.underSite, ex.underBytes, ex.since)
	ex.mu.Unlock()
	return p
}

func (ex *execution) fail(err error) {
	ex.mu.Lock()
	defer ex.mu.Unlock()
	if len(ex.errs) < maxRoundErrs {
		ex.errs = append(ex.errs, err)
	} else {
		ex.dropped++
	}
}

func (ex *execution) err() error {
	ex.mu.Lock()
	defer ex.mu.Unlock()
	errs := append(slices.Clone(ex.servers.errs), ex.errs...)
	if ex.dropped > 0 {
		errs = append(errs, fmt.Errorf("and %d more errors", ex.dropped))
	}
	return errors.Join(errs...)
}

// execute runs the tasks on Concurrency workers, reporting progress every
// ReportEvery, and returns once all are done or ctx is.
func (m *Mover) execute(ctx context.Context, tasks []Task, st Stats, servers *serverSet, base meta.MoverProgress) (*execution, error) {
	ex := &execution{m: m, servers: servers, base: base, underSite: maps.Clone(st.UnderBySite),
		underBytes: maps.Clone(st.UnderBytesBySite), since: m.since}
	ex.under.Store(st.UnderReplicated)
	ex.misplaced.Store(st.Misplaced)
	ex.toMove.Store(st.BytesToMove)

	work := make(chan *Task)
	var wg sync.WaitGroup
	for range min(m.cfg.Concurrency, max(len(tasks), 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for t := range work {
				ex.run(ctx, t)
			}
		}()
	}
	stopReports := make(chan struct{})
	reported := make(chan struct{})
	go func() {
		defer close(reported)
		tick := time.NewTicker(m.cfg.ReportEvery)
		defer tick.Stop()
		for {
			select {
			case <-stopReports:
				return
			case <-tick.C:
				p := ex.progress()
				p.At = m.cfg.Now().UnixNano()
				m.report(ctx, p)
			}
		}
	}()
feed:
	for i := range tasks {
		select {
		case work <- &tasks[i]:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	close(stopReports)
	<-reported
	if ctx.Err() != nil {
		return ex, ctx.Err()
	}
	return ex, ex.err()
}

// run copies t's block to the placement members that lack it, then removes
// the copies outside the placement that Removable allows.
func (ex *execution) run(ctx context.Context, t *Task) {
	have := make(map[string]bool, len(t.Holders)+len(t.Copy))
	for _, id := range t.Holders {
		have[id] = true
	}
	site := func(id string) string { return ex.servers.byID[id].Site }
	wasUnder := t.under(have, site)
	wasShort := t.shortSites(have, site)
	if len(t.Copy) > 0 {
		data, err := ex.fetch(ctx, t)
		if err != nil {
			ex.fail(err)
		}
		for _, dst := range t.Copy {
			if err != nil || ctx.Err() != nil {
				break
			}
			// A failed copy does not stop the copies to the other
			// destinations (a cut-off site must not hold up the rest).
			if cerr := ex.copyTo(ctx, t, dst, data); cerr != nil {
				if !errors.Is(cerr, errOutOfReach) {
					ex.fail(cerr)
				}
				continue
			}
			have[dst] = true
		}
	}
	for _, id := range t.Remove {
		if ctx.Err() != nil || !ex.reachable(id) || !t.Removable(id, have, ex.servers.up) {
			continue
		}
		removed, err := ex.servers.stores[id].Remove(ctx, t.Hash, ex.m.cfg.Now().UnixNano())
		ex.note(ctx, id, err)
		if err != nil {
			ex.fail(fmt.Errorf("remove %s from %s: %w", t.Hash.Short(), id, err))
			continue
		}
		if removed {
			delete(have, id)
			if f := ex.m.cfg.AfterStep; f != nil {
				f(Step{Kind: "remove", Hash: t.Hash, Server: id})
			}
		}
	}
	if wasUnder && !t.under(have, site) {
		ex.under.Add(-1)
	}
	if len(wasShort) > 0 {
		short := t.shortSites(have, site)
		ex.mu.Lock()
		for _, s := range wasShort {
			if !slices.Contains(short, s) {
				ex.underSite[s]--
				ex.underBytes[s] -= t.Size
			}
		}
		ex.mu.Unlock()
	}
	if len(t.Remove) > 0 && !slices.ContainsFunc(t.Remove, func(id string) bool { return have[id] }) {
		ex.misplaced.Add(-1)
	}
}

// fetch reads t's block from a holder, up servers first; a copy that fails
// its hash check or cannot be read is skipped for the next.
func (ex *execution) fetch(ctx context.Context, t *Task) ([]byte, error) {
	srcs := slices.Clone(t.Holders)
	slices.SortStableFunc(srcs, func(a, b string) int {
		ua, ub := ex.servers.up(a), ex.servers.up(b)
		switch {
		case ua == ub:
			return 0
		case ua:
			return -1
		default:
			return 1
		}
	})
	var errs []error
	for _, id := range srcs {
		if !ex.reachable(id) {
			errs = append(errs, outOfReach(id))
			continue
		}
		data, err := ex.servers.stores[id].Get(ctx, t.Hash)
		if err == nil {
			return data, nil
		}
		ex.note(ctx, id, err)
		errs = append(errs, fmt.Errorf("%s: %w", id, err))
		if ctx.Err() != nil {
			break
		}
	}
	return nil, fmt.Errorf("read %s for copying: %w", t.Hash.Short(), errors.Join(errs...))
}

// copyTo puts data on dst, after the rate limit lets it through; a dst
// that failed as unavailable earlier in the round is skipped (an error
// wrapping errOutOfReach).
func (ex *execution) copyTo(ctx context.Context, t *Task, dst string, data []byte) error {
	if !ex.reachable(dst) {
		return outOfReach(dst)
	}
	if err := ex.m.bucket.take(ctx, int64(len(data))); err != nil {
		return err
	}
	bs, ok := ex.servers.stores[dst]
	if !ok {
		return fmt.Errorf("copy %s to %s: server not listed this round", t.Hash.Short(), dst)
	}
	if err := bs.Put(ctx, t.Hash, data); err != nil {
		ex.note(ctx, dst, err)
		return fmt.Errorf("copy %s to %s: %w", t.Hash.Short(), dst, err)
	}
	ex.moved.Add(int64(len(data)))
	ex.toMove.Add(-t.Size)
	if f := ex.m.cfg.AfterStep; f != nil {
		f(Step{Kind: "copy", Hash: t.Hash, Server: dst})
	}
	return nil
}
