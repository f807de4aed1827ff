package meta_test

import (
	"context"
	"sync"

	"tessera/internal/kv"
	"tessera/internal/kv/memkv"
)

// feedStore is a memkv store whose elections a test can make a leader
// lose (as when its store lease lapses), which memkv's own elector, for
// one process, never does.
type feedStore struct {
	*memkv.Store

	elMu    sync.Mutex
	leaders map[string]*feedLead
	freed   chan struct{} // closed and replaced when a leadership ends
}

func newFeedStore() *feedStore {
	return &feedStore{Store: memkv.New(), leaders: map[string]*feedLead{}, freed: make(chan struct{})}
}

// feedLead is a won election of a feedStore.
type feedLead struct {
	s    *feedStore
	name string
	id   string
	done chan struct{}
	once sync.Once
}

func (l *feedLead) Done() <-chan struct{} { return l.done }

func (l *feedLead) Resign(context.Context) error {
	l.end()
	return nil
}

// end ends the leadership (resigned, or lost: the test calls it to play a
// leader's store lease lapsing).
func (l *feedLead) end() {
	l.once.Do(func() {
		l.s.elMu.Lock()
		if l.s.leaders[l.name] == l {
			delete(l.s.leaders, l.name)
		}
		close(l.done)
		close(l.s.freed)
		l.s.freed = make(chan struct{})
		l.s.elMu.Unlock()
	})
}

// Campaign implements kv.Elector.
func (s *feedStore) Campaign(ctx context.Context, name, id string) (kv.Leadership, error) {
	for {
		s.elMu.Lock()
		if s.leaders[name] == nil {
			l := &feedLead{s: s, name: name, id: id, done: make(chan struct{})}
			s.leaders[name] = l
			s.elMu.Unlock()
			return l, nil
		}
		freed := s.freed
		s.elMu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// leader returns the current leadership of election name, or nil.
func (s *feedStore) leader(name string) *feedLead {
	s.elMu.Lock()
	defer s.elMu.Unlock()
	return s.leaders[name]
}

var _ kv.Elector = (*feedStore)(nil)
