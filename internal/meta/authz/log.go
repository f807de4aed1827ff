package authz

import (
	"log/slog"
	"sync"
	"time"

	"tessera/internal/auth"
	"tessera/internal/ratelog"
)

// maxDenyLimiters bounds the per-identity-and-method limiters; past it
// every other refusal shares one, so a flood of names stays bounded too.
const maxDenyLimiters = 1024

// denyLog logs refused calls, at most one line per identity and method per
// interval.
type denyLog struct {
	every time.Duration
	now   func() time.Time

	mu       sync.Mutex
	limiters map[string]*ratelog.Limiter
	shared   *ratelog.Limiter
}

func (d *denyLog) limiter(key string) *ratelog.Limiter {
	d.mu.Lock()
	defer d.mu.Unlock()
	if l, ok := d.limiters[key]; ok {
		return l
	}
	if len(d.limiters) >= maxDenyLimiters {
		if d.shared == nil {
			d.shared = &ratelog.Limiter{Every: d.every, Now: d.now}
		}
		return d.shared
	}
	if d.limiters == nil {
		d.limiters = map[string]*ratelog.Limiter{}
	}
	l := &ratelog.Limiter{Every: d.every, Now: d.now}
	d.limiters[key] = l
	return l
}

// log reports that id was refused method, and why.
func (d *denyLog) log(log *slog.Logger, id auth.Identity, method string, why error) {
	key := id.Name + "\x00" + string(id.Role) + "\x00" + id.Root + "\x00" + method
	who := id.String()
	if id.Role == "" {
		who = "unauthenticated"
	}
	d.limiter(key).Log(log, slog.LevelWarn, "meta call refused",
		"who", who, "via", id.Via, "method", method, "why", why.Error())
}

// knownServers are the block-server IDs seen registered, so that the
// registration of a new one is logged as the administrative action it is
// and heartbeats are not.
type knownServers struct {
	mu sync.Mutex
	m  map[string]bool
}

func (k *knownServers) has(id string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.m[id]
}

func (k *knownServers) set(ids ...string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.m == nil {
		k.m = map[string]bool{}
	}
	for _, id := range ids {
		k.m[id] = true
	}
}

func (k *knownServers) forget(id string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.m, id)
}
