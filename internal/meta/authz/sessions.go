package authz

import (
	"sync"
	"time"

	"tessera/internal/auth"
	"tessera/internal/meta"
)

// sessionOwners remembers which identity opened each session, so that no
// other identity polls its callbacks, closes it or makes calls on its
// behalf. Like the sessions themselves it is soft state: a restarted
// service knows neither.
type sessionOwners struct {
	mu sync.Mutex
	m  map[meta.SessionID]*owner
}

type owner struct {
	id   auth.Identity
	ttl  time.Duration
	seen time.Time // the latest open or poll
}

// same reports whether two identities are the same caller.
func same(a, b auth.Identity) bool {
	return a.Name == b.Name && a.Role == b.Role && a.Root == b.Root
}

// add records a session id opened; it also forgets sessions silent for
// twice their TTL, which the service has expired.
func (s *sessionOwners) add(sid meta.SessionID, id auth.Identity, ttl time.Duration, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[meta.SessionID]*owner{}
	}
	for k, o := range s.m {
		if now.Sub(o.seen) > 2*o.ttl {
			delete(s.m, k)
		}
	}
	s.m[sid] = &owner{id: id, ttl: ttl, seen: now}
}

// check reports whether sid is known and, if so, whether id owns it; a
// known session's use by its owner counts as seen at now.
func (s *sessionOwners) check(sid meta.SessionID, id auth.Identity, now time.Time) (known, owned bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.m[sid]
	if !ok {
		return false, false
	}
	if !same(o.id, id) {
		return true, false
	}
	o.seen = now
	return true, true
}

// drop forgets sid.
func (s *sessionOwners) drop(sid meta.SessionID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, sid)
}
