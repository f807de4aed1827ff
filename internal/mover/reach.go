package mover

import (
	"context"
	"errors"
	"fmt"

	"tessera/internal/block"
)

// errOutOfReach marks a step skipped because its server failed as
// unavailable earlier in the round.
var errOutOfReach = errors.New("out of reach this round")

// reachable reports whether server id has not failed as unavailable in
// this round. A server cut off after the round listed it (a partition, a
// crash) would otherwise make every remaining step on it wait out the
// block client's budget in turn: a round of N such steps would last about
// N/Concurrency budgets, reporting "running" all along, and the copies
// between reachable servers would wait behind them.
func (ex *execution) reachable(id string) bool {
	ex.mu.Lock()
	defer ex.mu.Unlock()
	return !ex.unreachable[id]
}

// note records that a call to server id failed with err: an unavailable
// server (not a cancelled round) is skipped for the rest of the round; the
// next round lists the servers again.
func (ex *execution) note(ctx context.Context, id string, err error) {
	if err == nil || ctx.Err() != nil || !errors.Is(err, block.ErrUnavailable) {
		return
	}
	ex.mu.Lock()
	defer ex.mu.Unlock()
	if ex.unreachable == nil {
		ex.unreachable = map[string]bool{}
	}
	ex.unreachable[id] = true
}

// outOfReach is the error of a step skipped on server id.
func outOfReach(id string) error { return fmt.Errorf("%s: %w", id, errOutOfReach) }
