package meta

import (
	"context"

	"tessera/internal/kv"
)

// NewBoundStore returns inner refusing, as etcd does, any transaction of
// more than limit compares or writes (boundStore, segment_test.go).
func NewBoundStore(inner kv.Store, limit int) kv.Store { return boundStore{Store: inner, limit: limit} }

// TidyLeases runs one lease-record tidying round of ServeShared now.
func (s *Service) TidyLeases(ctx context.Context) { s.tidyLeases(ctx) }
