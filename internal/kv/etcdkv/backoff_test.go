package etcdkv

import (
	"testing"
	"time"
)

// The engine's waits keep the windows they had before they moved onto
// internal/backoff: a conflict retry from [d/2, 3d/2) with d doubling from
// 1 ms to 100 ms, a lagging read the same from 10 ms to 500 ms, and a
// leaderless update from [100 ms, 500 ms).
func TestBackoffWindows(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct {
		name   string
		policy interface {
			Delay(int) time.Duration
			Check() error
		}
		delays []time.Duration
	}{
		{"conflict", conflictBackoff, []time.Duration{1 * ms, 2 * ms, 4 * ms, 32 * ms, 64 * ms, 100 * ms}},
		{"lag", lagBackoff, []time.Duration{10 * ms, 20 * ms, 40 * ms, 320 * ms, 500 * ms, 500 * ms}},
		{"leader", leaderBackoff, []time.Duration{300 * ms, 300 * ms, 300 * ms, 300 * ms, 300 * ms, 300 * ms}},
	} {
		if err := c.policy.Check(); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
		for i, n := range []int{0, 1, 2, 5, 6, 20} {
			if got := c.policy.Delay(n); got != c.delays[i] {
				t.Errorf("%s: delay after %d failures = %v, want %v", c.name, n, got, c.delays[i])
			}
		}
	}
	lo, hi := time.Duration(1<<62), time.Duration(0)
	w := leaderBackoff
	for i := range int64(1000) {
		w.Rand = func(n int64) int64 { return n * i / 1000 }
		d := w.Start().Next()
		lo, hi = min(lo, d), max(hi, d)
	}
	if lo != 100*ms || hi < 499*ms || hi >= 500*ms {
		t.Errorf("leaderless waits span [%v, %v], want [100ms, 500ms)", lo, hi)
	}
}
