package blocktest

import (
	"context"
	"sync"

	"tessera/internal/block"
)

// MemStore is an in-memory block.Store for tests that are about
// something else than storing blocks (the client, vfs, front ends). It
// checks each block's hash on Put, as every store does, and counts the
// Puts.
type MemStore struct {
	mu     sync.Mutex
	blocks map[block.Hash][]byte
	puts   int
}

// NewMem returns an empty MemStore.
func NewMem() *MemStore { return &MemStore{blocks: make(map[block.Hash][]byte)} }

// Put implements block.Store.
func (m *MemStore) Put(ctx context.Context, h block.Hash, data []byte) error {
	if block.Sum(data) != h {
		return block.ErrHashMismatch
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.blocks[h] = append([]byte(nil), data...)
	m.puts++
	return nil
}

// Get implements block.Store.
func (m *MemStore) Get(ctx context.Context, h block.Hash) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.blocks[h]
	if !ok {
		return nil, block.ErrNotFound
	}
	return b, nil
}

// Has implements block.Store.
func (m *MemStore) Has(ctx context.Context, hs []block.Hash) ([]bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]bool, len(hs))
	for i, h := range hs {
		_, out[i] = m.blocks[h]
	}
	return out, nil
}

// Puts is how many Puts succeeded.
func (m *MemStore) Puts() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.puts
}
