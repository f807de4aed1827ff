package client

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math/rand"
	"sync"
	"testing"
	"time"

	"tessera/internal/block"
	"tessera/internal/kv/memkv"
	"tessera/internal/meta"
)

// flakyStore is a memStore that can be switched off (every call fails as
// an unreachable server would) or made to return corrupt bytes.
type flakyStore struct {
	memStore
	mu      sync.Mutex
	down    bool
	corrupt bool
}

func (s *flakyStore) state() (down, corrupt bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.down, s.corrupt
}

func (s *flakyStore) Put(ctx context.Context, h block.Hash, data []byte) error {
	if down, _ := s.state(); down {
		return block.ErrUnavailable
	}
	return s.memStore.Put(ctx, h, data)
}

func (s *flakyStore) Get(ctx context.Context, h block.Hash) ([]byte, error) {
	down, corrupt := s.state()
	if down {
		return nil, block.ErrUnavailable
	}
	data, err := s.memStore.Get(ctx, h)
	if err == nil && corrupt {
		// A corrupt copy: the store finds it, reports it and drops it, as
		// the disk store moves a corrupt file aside.
		s.memStore.mu.Lock()
		delete(s.memStore.blocks, h)
		s.memStore.mu.Unlock()
		return nil, fmt.Errorf("%w: test copy", block.ErrCorrupt)
	}
	return data, err
}

func (s *flakyStore) holds(h block.Hash) bool {
	s.memStore.mu.Lock()
	defer s.memStore.mu.Unlock()
	_, ok := s.memStore.blocks[h]
	return ok
}

func newReplicaEnv(t *testing.T, servers, replicas int) (*meta.Service, *Client, map[string]*flakyStore) {
	t.Helper()
	ctx := context.Background()
	svc, err := meta.New(memkv.New(), meta.Options{BlockSize: 64 << 10, Replicas: replicas})
	if err != nil {
		t.Fatal(err)
	}
	stores := map[string]*flakyStore{}
	for i := range servers {
		id := fmt.Sprintf("b%d", i)
		stores[id] = &flakyStore{memStore: memStore{blocks: map[block.Hash][]byte{}}}
		if _, err := svc.RegisterServer(ctx, meta.Server{ID: id, Addr: id, Host: "h" + id, State: meta.StateUp}); err != nil {
			t.Fatal(err)
		}
	}
	c, err := New(ctx, Config{
		Meta:          svc,
		Dial:          func(s meta.Server) (block.Store, error) { return stores[s.ID], nil },
		Logger:        slog.New(slog.DiscardHandler),
		MemCacheBytes: 64 << 10,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return svc, c, stores
}

// testClient makes a client of svc that reaches server id through
// stores[id], with cfg's other fields (a silent logger unless given); it is
// closed when the test ends.
func testClient[S block.Store](t *testing.T, svc meta.API, stores map[string]S, cfg Config) *Client {
	t.Helper()
	cfg.Meta = svc
	cfg.Dial = func(s meta.Server) (block.Store, error) { return stores[s.ID], nil }
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	c, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// TestReplicatedWriteSurvivesDeadServer writes with R=3 over five servers,
// one of them down: every block still gets three copies, on distinct
// servers, and fsync succeeds.
func TestReplicatedWriteSurvivesDeadServer(t *testing.T) {
	ctx := context.Background()
	svc, c, stores := newReplicaEnv(t, 5, 3)
	stores["b2"].down = true
	in, err := svc.Create(ctx, meta.CreateReq{Parent: meta.RootIno, Name: "f", Mode: 0o100644})
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 8*64<<10)
	rand.New(rand.NewSource(3)).Read(data)
	h, _, _ := c.Open(ctx, in, 0)
	if _, err := h.Write(ctx, 0, data); err != nil {
		t.Fatal(err)
	}
	if err := h.Fsync(ctx); err != nil {
		t.Fatalf("fsync with one of five servers down: %v", err)
	}
	h.Release(ctx)
	r, err := svc.GetRecipe(ctx, in.Ino, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	for i, bh := range r.Blocks {
		n := 0
		for id, st := range stores {
			if st.holds(bh) {
				if id == "b2" {
					t.Fatalf("block %d on the dead server", i)
				}
				n++
			}
		}
		if n != 3 {
			t.Fatalf("block %d has %d copies; want 3", i, n)
		}
	}
}

// TestReadFallsBackAndRepairs reads a block whose first copy is corrupt and
// another's server is down: the read succeeds from the third, and the
// corrupt copy is replaced.
func TestReadFallsBackAndRepairs(t *testing.T) {
	ctx := context.Background()
	svc, c, stores := newReplicaEnv(t, 3, 3)
	in, _ := svc.Create(ctx, meta.CreateReq{Parent: meta.RootIno, Name: "f", Mode: 0o100644})
	data := bytes.Repeat([]byte("tessera!"), 8<<10) // one full 64 KiB block
	h, _, _ := c.Open(ctx, in, 0)
	h.Write(ctx, 0, data)
	if err := h.Fsync(ctx); err != nil {
		t.Fatal(err)
	}
	h.Release(ctx)
	bh := block.Sum(data)
	order := c.router.ranked(bh)
	stores[order[0].id].corrupt = true
	stores[order[1].id].down = true

	c2 := testClient(t, svc, stores, Config{})
	cur, _ := svc.GetAttr(ctx, in.Ino)
	rh, _, _ := c2.Open(ctx, cur, 0)
	defer rh.Release(ctx)
	buf := make([]byte, len(data))
	if n, err := rh.Read(ctx, 0, buf); err != nil || n != len(data) || !bytes.Equal(buf, data) {
		t.Fatalf("read with a corrupt and a dead copy: n=%d err=%v", n, err)
	}
	stores[order[0].id].mu.Lock()
	stores[order[0].id].corrupt = false
	stores[order[0].id].mu.Unlock()
	for i := 0; i < 200 && !stores[order[0].id].holds(bh); i++ {
		c2.bg.Wait()
		sleepBriefly()
	}
	if !stores[order[0].id].holds(bh) {
		t.Fatal("the corrupt copy was not replaced")
	}
}

// sleepBriefly yields while a background repair runs.
func sleepBriefly() { time.Sleep(5 * time.Millisecond) }
