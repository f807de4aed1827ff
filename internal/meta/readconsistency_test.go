package meta_test

import (
	"context"
	"sync"
	"syscall"
	"testing"

	"tessera/internal/kv"
	"tessera/internal/kv/memkv"
	"tessera/internal/meta"
)

// consistencyStore records the read consistency each View asked for.
type consistencyStore struct {
	kv.Store
	mu   sync.Mutex
	seen []kv.Consistency
}

func (s *consistencyStore) View(ctx context.Context, fn func(tx kv.Txn) error) error {
	s.mu.Lock()
	s.seen = append(s.seen, kv.ConsistencyOf(ctx))
	s.mu.Unlock()
	return s.Store.View(ctx, fn)
}

func (s *consistencyStore) take() []kv.Consistency {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.seen
	s.seen = nil
	return out
}

// TestReadConsistency: a read-only call marked AllowSerializable reads the
// store at kv.Serializable; unmarked calls read Linearizable.
func TestReadConsistency(t *testing.T) {
	store := &consistencyStore{Store: memkv.New()}
	svc, err := meta.New(store, meta.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	in, err := svc.Create(ctx, meta.CreateReq{Parent: meta.RootIno, Name: "f", Mode: syscall.S_IFREG | 0644})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		ctx  context.Context
		want kv.Consistency
	}{{ctx, kv.Linearizable}, {meta.AllowSerializable(ctx), kv.Serializable}} {
		store.take()
		if _, err := svc.GetAttr(c.ctx, in.Ino); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.Lookup(c.ctx, meta.RootIno, "f"); err != nil {
			t.Fatal(err)
		}
		seen := store.take()
		if len(seen) == 0 {
			t.Fatal("no View")
		}
		for _, got := range seen {
			if got != c.want {
				t.Fatalf("views read at %v, want %v (serializable allowed: %v)", seen, c.want, meta.SerializableAllowed(c.ctx))
			}
		}
	}
}
