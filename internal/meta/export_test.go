package meta

import "tessera/internal/kv"

// NewBoundStore returns inner refusing, as etcd does, any transaction of
// more than limit compares or writes (boundStore, segment_test.go).
func NewBoundStore(inner kv.Store, limit int) kv.Store { return boundStore{Store: inner, limit: limit} }

// FlushOpenDrops waits until the open records queued by releases are
// deleted (opendrops.go); a no-op for a Service that is alone.
func FlushOpenDrops(s *Service) {
	if s.sh != nil {
		s.flushOpenDrops()
	}
}
