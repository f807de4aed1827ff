package client

import (
	"bytes"
	"context"
	"math/rand"
	"sync"
	"testing"

	"tessera/internal/block"
)

// putGate blocks the first Put of fewer than limit bytes once armed,
// until open is closed; hit is closed when it blocks.
type putGate struct {
	*memStore
	mu    sync.Mutex
	armed bool
	limit int
	hit   chan struct{}
	open  chan struct{}
}

func (g *putGate) Put(ctx context.Context, h block.Hash, data []byte) error {
	g.mu.Lock()
	stop := g.armed && len(data) < g.limit
	if stop {
		g.armed = false
	}
	g.mu.Unlock()
	if stop {
		close(g.hit)
		<-g.open
	}
	return g.memStore.Put(ctx, h, data)
}

// TestComposeAcrossCompaction: a small write is composed over block h1
// (its base and patches) while h1 is compacted: Decompose releases h1's
// pieces, and they are removed (as the reclaimer does after its window)
// before the write's patch upload ends. The fsync must not report success
// for a composition over removed pieces: the commit touches them first and
// fails with EIO (before, it succeeded and a fresh client read an error).
func TestComposeAcrossCompaction(t *testing.T) {
	const bs = 256 << 10
	ctx := context.Background()
	s := newShared(t, bs)
	g := &putGate{memStore: s.store, limit: bs, hit: make(chan struct{}), open: make(chan struct{})}
	c := testClient(t, s.api, map[string]*putGate{"b0": g}, Config{CompactAfter: -1})
	in := s.create(t, "f")
	model := randBytes(rand.New(rand.NewSource(14)), bs)
	h := open(t, c, in.Ino)
	write(t, h, 0, model)
	flush(t, h)
	write(t, h, 5000, []byte("patched"))
	flush(t, h)
	model = apply(model, 5000, []byte("patched"))
	r, err := s.api.GetRecipe(ctx, in.Ino, 0, 1)
	if err != nil || len(r.Composed) != 1 {
		t.Fatalf("recipe: %v %v", r.Composed, err)
	}
	h1 := r.Blocks[0]
	comp := r.Composed[h1]

	g.mu.Lock()
	g.armed = true
	g.mu.Unlock()
	done := make(chan error, 1)
	go func() {
		if _, err := h.Write(ctx, 90000, []byte("second")); err != nil {
			done <- err
			return
		}
		done <- h.Fsync(ctx)
	}()
	<-g.hit // the patch upload started: its composition is chosen
	if err := c.compact(ctx, compactJob{h: h1, replicas: h.f.replicas}); err != nil {
		t.Fatalf("compact: %v", err)
	}
	for _, p := range comp.Pieces() {
		n, err := s.api.BlockRefs(ctx, p)
		t.Logf("piece %s: %d refs (%v) after Decompose", p.Short(), n, err)
		if n == 0 { // what the reclaimer removes after its window
			s.store.mu.Lock()
			delete(s.store.blocks, p)
			s.store.mu.Unlock()
		}
	}
	close(g.open)
	ferr := <-done
	model = apply(model, 90000, []byte("second"))
	t.Logf("fsync of the second write: %v", ferr)
	r, _ = s.api.GetRecipe(ctx, in.Ino, 0, 1)
	t.Logf("recipe now: block %s composed %v", r.Blocks[0].Short(), r.Composed)
	fresh := testClient(t, s.api, map[string]*memStore{"b0": s.store}, Config{CompactAfter: -1})
	fh, _, _, err := fresh.OpenIno(ctx, in.Ino, 0)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, bs+1)
	n, rerr := fh.Read(ctx, 0, buf)
	if ferr == nil && (rerr != nil || !bytes.Equal(buf[:n], model)) {
		t.Fatalf("fsync succeeded, yet a fresh client reads %d bytes, err %v, equal %v", n, rerr, bytes.Equal(buf[:n], model))
	}
}

// TestWriteAfterCompactionKeepsData: a file kept open across the
// compaction of its block h1 (stored whole, pieces released and removed)
// gets a small write: it must build on h1 itself, not on the removed
// pieces. Before, the fsync succeeded and a fresh client read "block not
// found" (the crash test lost a block so under load).
func TestWriteAfterCompactionKeepsData(t *testing.T) {
	const bs = 256 << 10
	ctx := context.Background()
	s := newShared(t, bs)
	g := &putGate{memStore: s.store, limit: bs, hit: make(chan struct{}), open: make(chan struct{})}
	c := testClient(t, s.api, map[string]*putGate{"b0": g}, Config{CompactAfter: -1})
	in := s.create(t, "f")
	model := randBytes(rand.New(rand.NewSource(14)), bs)
	h := open(t, c, in.Ino)
	write(t, h, 0, model)
	flush(t, h)
	write(t, h, 5000, []byte("patched"))
	flush(t, h)
	model = apply(model, 5000, []byte("patched"))
	r, err := s.api.GetRecipe(ctx, in.Ino, 0, 1)
	if err != nil || len(r.Composed) != 1 {
		t.Fatalf("recipe: %v %v", r.Composed, err)
	}
	h1 := r.Blocks[0]
	comp := r.Composed[h1]

	if err := c.compact(ctx, compactJob{h: h1, replicas: h.f.replicas}); err != nil {
		t.Fatalf("compact: %v", err)
	}
	for _, p := range comp.Pieces() {
		n, err := s.api.BlockRefs(ctx, p)
		t.Logf("piece %s: %d refs (%v) after Decompose", p.Short(), n, err)
		if n == 0 { // what the reclaimer removes after its window
			s.store.mu.Lock()
			delete(s.store.blocks, p)
			s.store.mu.Unlock()
		}
	}
	done := make(chan error, 1)
	go func() {
		if _, err := h.Write(ctx, 90000, []byte("second")); err != nil {
			done <- err
			return
		}
		done <- h.Fsync(ctx)
	}()
	ferr := <-done
	model = apply(model, 90000, []byte("second"))
	if ferr != nil {
		t.Fatalf("fsync of a write after the compaction: %v", ferr)
	}
	r, _ = s.api.GetRecipe(ctx, in.Ino, 0, 1)
	t.Logf("recipe now: block %s composed %v", r.Blocks[0].Short(), r.Composed)
	fresh := testClient(t, s.api, map[string]*memStore{"b0": s.store}, Config{CompactAfter: -1})
	fh, _, _, err := fresh.OpenIno(ctx, in.Ino, 0)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, bs+1)
	n, rerr := fh.Read(ctx, 0, buf)
	if ferr == nil && (rerr != nil || !bytes.Equal(buf[:n], model)) {
		t.Fatalf("fsync succeeded, yet a fresh client reads %d bytes, err %v, equal %v", n, rerr, bytes.Equal(buf[:n], model))
	}
}

// TestWriteAfterCompactionReclaimer is TestWriteAfterCompactionKeepsData
// with the real reclaimer and disk stores.
func TestWriteAfterCompactionReclaimer(t *testing.T) {
	ctx := context.Background()
	svc, c, _, stores, _ := touchEnv(t)
	in := createFile(t, svc, "f")
	h := open(t, c, in.Ino)
	model := oneBlock(7)
	write(t, h, 0, model)
	flush(t, h)
	write(t, h, 5000, []byte("patched"))
	flush(t, h)
	model = apply(model, 5000, []byte("patched"))
	r, err := svc.GetRecipe(ctx, in.Ino, 0, 1)
	if err != nil || len(r.Composed) != 1 {
		t.Fatalf("recipe: %v %v", r.Composed, err)
	}
	h1 := r.Blocks[0]
	if err := c.compact(ctx, compactJob{h: h1, replicas: h.f.replicas}); err != nil {
		t.Fatalf("compact: %v", err)
	}
	rep, err := reclaimerOf(svc, stores).Round(ctx)
	t.Logf("reclaimer round: %+v %v", rep, err)
	write(t, h, 30000, []byte("second"))
	ferr := h.Fsync(ctx)
	model = apply(model, 30000, []byte("second"))
	if ferr != nil {
		t.Fatalf("fsync of a write after the compaction: %v", ferr)
	}
	fresh := testClient(t, svc, stores, Config{})
	fh, _, _, err := fresh.OpenIno(ctx, in.Ino, 0)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, len(model)+1)
	n, rerr := fh.Read(ctx, 0, buf)
	if ferr == nil && (rerr != nil || !bytes.Equal(buf[:n], model)) {
		t.Fatalf("fsync succeeded, yet a fresh client reads %d bytes, err %v", n, rerr)
	}
}
