package cachetier

import (
	"sync"
	"time"

	"tessera/internal/backoff"
)

// outcome is what an operation tells about its server's health.
type outcome int

const (
	// answered: the server replied (a hit, a miss, even an error line).
	answered outcome = iota
	// failed: the connection failed, timed out or carried garbage.
	failed
	// abandoned: the caller's context ended first; says nothing.
	abandoned
)

// health is one server's up/down state. A server goes down on a failed
// operation and stays down until until; then one operation (the probe) is
// let through: if the server answers it is up again, if not it is down for
// twice as long (up to the policy's Max).
type health struct {
	policy backoff.Policy // how long the server stays down

	mu struct {
		sync.Mutex
		down    bool
		until   time.Time
		bo      *backoff.Backoff // while down
		probing bool             // a probe is under way
	}
}

// admit reports whether an operation may go to the server at now, and
// whether it is the probe of a down server (which must report back).
func (h *health) admit(now time.Time) (ok, probe bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case !h.mu.down:
		return true, false
	case h.mu.probing || now.Before(h.mu.until):
		return false, false
	}
	h.mu.probing = true
	return true, true
}

// up reports whether an operation at now would be let through (without
// claiming the probe).
func (h *health) up(now time.Time) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return !h.mu.down || (!h.mu.probing && !now.Before(h.mu.until))
}

// report records the outcome of an admitted operation at now; it reports
// whether the server just went down.
func (h *health) report(now time.Time, probe bool, o outcome) (wentDown bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if probe {
		h.mu.probing = false
		switch o {
		case answered:
			h.mu.down, h.mu.bo = false, nil
		case failed:
			h.mu.until = now.Add(h.mu.bo.Next())
		}
		return false
	}
	// Operations admitted before the server went down may still finish
	// either way; only the first failure of an up server counts.
	if o == failed && !h.mu.down {
		h.mu.down, h.mu.bo = true, h.policy.Start()
		h.mu.until = now.Add(h.mu.bo.Next())
		return true
	}
	return false
}

// state returns whether the server is down, and until when.
func (h *health) state() (down bool, until time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.mu.down, h.mu.until
}
