package cachetier

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"tessera/internal/block"
	"tessera/internal/cachetier/memcache/mctest"
)

// memStore is an in-memory block.Store that counts the Gets reaching it.
type memStore struct {
	gets atomic.Int64
	mu   struct {
		sync.Mutex
		blocks map[block.Hash][]byte
	}
}

var _ block.Store = (*memStore)(nil)

func newMemStore() *memStore {
	m := &memStore{}
	m.mu.blocks = map[block.Hash][]byte{}
	return m
}

func (m *memStore) Put(ctx context.Context, h block.Hash, data []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if block.Sum(data) != h {
		return fmt.Errorf("put %s: %w", h.Short(), block.ErrHashMismatch)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.mu.blocks[h]; !ok {
		m.mu.blocks[h] = bytes.Clone(data)
	}
	return nil
}

func (m *memStore) Get(ctx context.Context, h block.Hash) ([]byte, error) {
	m.gets.Add(1)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	d, ok := m.mu.blocks[h]
	if !ok {
		return nil, fmt.Errorf("get %s: %w", h.Short(), block.ErrNotFound)
	}
	return bytes.Clone(d), nil
}

func (m *memStore) Has(ctx context.Context, hs []block.Hash) ([]bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]bool, len(hs))
	for i, h := range hs {
		_, out[i] = m.mu.blocks[h]
	}
	return out, nil
}

func startServers(t testing.TB, n int) []*mctest.Server {
	t.Helper()
	srvs := make([]*mctest.Server, n)
	for i := range srvs {
		srvs[i] = mctest.Start(t, mctest.Options{})
	}
	return srvs
}

func newPool(t testing.TB, srvs []*mctest.Server, opts Options) *Pool {
	t.Helper()
	var addrs []string
	for _, s := range srvs {
		addrs = append(addrs, s.Addr)
	}
	p, err := New(addrs, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func newCache(t testing.TB, p *Pool, next block.Store, opts ...Option) *BlockCache {
	t.Helper()
	c := NewBlockCache(p, next, opts...)
	t.Cleanup(func() { c.Close() })
	return c
}

func drain(t testing.TB, c *BlockCache) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Drain(ctx); err != nil {
		t.Fatalf("Drain: %v", err)
	}
}

func mustGet(t testing.TB, s block.Store, h block.Hash, want []byte) {
	t.Helper()
	got, err := s.Get(context.Background(), h)
	if err != nil {
		t.Fatalf("Get %s: %v", h.Short(), err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("Get %s: %d bytes, want %d (content differs)", h.Short(), len(got), len(want))
	}
}
