package meta_test

import (
	"bytes"
	"context"
	"sync"

	"tessera/internal/kv"
	"tessera/internal/kv/memkv"
)

// feedStore is a memkv store with the change feed (kv.Watcher) and the
// elections (kv.Elector) of a store several meta processes share, in
// memory: the test double for the Services of one process sharing a store
// until the engines offer their own.
type feedStore struct {
	*memkv.Store
	mu   sync.Mutex // serializes commits with their publication
	rev  int64
	subs map[*feedSub]struct{}

	elMu    sync.Mutex
	leaders map[string]*feedLead
	freed   chan struct{} // closed and replaced when a leadership ends
}

type feedSub struct {
	prefix []byte
	mu     sync.Mutex
	queue  [][]kv.Change
	wake   chan struct{}
}

func newFeedStore() *feedStore {
	return &feedStore{Store: memkv.New(), subs: map[*feedSub]struct{}{},
		leaders: map[string]*feedLead{}, freed: make(chan struct{})}
}

// recTxn records the writes of one transaction.
type recTxn struct {
	kv.Txn
	writes []kv.Change
}

func (t *recTxn) Put(k, v []byte) error {
	t.writes = append(t.writes, kv.Change{Key: bytes.Clone(k), Value: bytes.Clone(v)})
	return t.Txn.Put(k, v)
}

func (t *recTxn) Delete(k []byte) error {
	t.writes = append(t.writes, kv.Change{Key: bytes.Clone(k), Deleted: true})
	return t.Txn.Delete(k)
}

// Update implements kv.Store and publishes what it committed.
func (s *feedStore) Update(ctx context.Context, fn func(tx kv.Txn) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var writes []kv.Change
	err := s.Store.Update(ctx, func(tx kv.Txn) error {
		rt := &recTxn{Txn: tx}
		err := fn(rt)
		writes = rt.writes
		return err
	})
	if err != nil || len(writes) == 0 {
		return err
	}
	s.rev++
	for sub := range s.subs {
		var batch []kv.Change
		for _, c := range writes {
			if bytes.HasPrefix(c.Key, sub.prefix) {
				c.Rev = s.rev
				batch = append(batch, c)
			}
		}
		if len(batch) > 0 {
			sub.mu.Lock()
			sub.queue = append(sub.queue, batch)
			sub.mu.Unlock()
			select {
			case sub.wake <- struct{}{}:
			default:
			}
		}
	}
	return nil
}

// Watch implements kv.Watcher (from 0 only: what the meta service uses).
func (s *feedStore) Watch(ctx context.Context, prefix []byte, from int64) (<-chan []kv.Change, error) {
	sub := &feedSub{prefix: bytes.Clone(prefix), wake: make(chan struct{}, 1)}
	s.mu.Lock()
	s.subs[sub] = struct{}{}
	s.mu.Unlock()
	out := make(chan []kv.Change)
	go func() {
		defer close(out)
		defer func() {
			s.mu.Lock()
			delete(s.subs, sub)
			s.mu.Unlock()
		}()
		for {
			sub.mu.Lock()
			var next []kv.Change
			if len(sub.queue) > 0 {
				next = sub.queue[0]
				sub.queue = sub.queue[1:]
			}
			sub.mu.Unlock()
			if next == nil {
				select {
				case <-sub.wake:
					continue
				case <-ctx.Done():
					return
				}
			}
			select {
			case out <- next:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
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

var (
	_ kv.Watcher = (*feedStore)(nil)
	_ kv.Elector = (*feedStore)(nil)
)
