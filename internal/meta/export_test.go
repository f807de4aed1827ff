package meta

import (
	"context"

	"tessera/internal/kv"
)

// NewBoundStore returns inner refusing, as etcd does, any transaction of
// more than limit compares or writes (boundStore, segment_test.go).
func NewBoundStore(inner kv.Store, limit int) kv.Store { return boundStore{Store: inner, limit: limit} }

// TidyLeases runs one lease-record tidying round of ServeShared on s now
// (a function, not a method: the pipeline's table lists every method).
func TidyLeases(ctx context.Context, s *Service) { s.tidyLeases(ctx) }

// FlushOpenDrops waits until the open records queued by releases are
// deleted (opendrops.go); a no-op for a Service that is alone.
func FlushOpenDrops(s *Service) {
	if s.sh != nil {
		s.flushOpenDrops()
	}
}
