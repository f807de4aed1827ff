package client

import (
	"bytes"
	"context"
	"math/rand"
	"sync"
	"testing"

	"tessera/internal/block"
	"tessera/internal/meta"
)

// A block is compacted (stored whole, its pieces released) while a file
// holding it open goes on writing small changes into it; the reclaimer
// removes released pieces after its window. No fsync may succeed for a
// composition over removed pieces (the crash test lost a block so under
// load).

// putGate blocks the first Put of fewer than limit bytes once armed, until
// open is closed; hit is closed when it blocks.
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
	g.armed = g.armed && !stop
	g.mu.Unlock()
	if stop {
		close(g.hit)
		<-g.open
	}
	return g.memStore.Put(ctx, h, data)
}

// composedEnv is a file of one block, committed whole then patched: its
// block h1 is composed of comp's pieces.
type composedEnv struct {
	s     *shared
	g     *putGate
	c     *Client
	h     *Handle
	in    meta.Inode
	model []byte
	h1    block.Hash
	comp  meta.Composition
}

const composedBS = 256 << 10

func newComposedEnv(t *testing.T) *composedEnv {
	t.Helper()
	e := &composedEnv{s: newShared(t, composedBS)}
	e.g = &putGate{memStore: e.s.store, limit: composedBS, hit: make(chan struct{}), open: make(chan struct{})}
	e.c = testClient(t, e.s.api, map[string]*putGate{"b0": e.g}, Config{CompactAfter: -1})
	e.in = e.s.create(t, "f")
	e.model = randBytes(rand.New(rand.NewSource(14)), composedBS)
	e.h = open(t, e.c, e.in.Ino)
	e.write(t, 0, e.model)
	e.write(t, 5000, []byte("patched"))
	r, err := e.s.api.GetRecipe(context.Background(), e.in.Ino, 0, 1)
	if err != nil || len(r.Composed) != 1 {
		t.Fatalf("recipe after a small write: composed %v, %v; want one composed block", r.Composed, err)
	}
	e.h1, e.comp = r.Blocks[0], r.Composed[r.Blocks[0]]
	return e
}

func (e *composedEnv) write(t *testing.T, off int64, data []byte) {
	t.Helper()
	write(t, e.h, off, data)
	flush(t, e.h)
	e.model = apply(e.model, off, data)
}

// compactAndReclaim stores h1 whole and removes the pieces no recipe names
// any more, as the reclaimer does once its window has passed.
func (e *composedEnv) compactAndReclaim(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	if err := e.c.compact(ctx, compactJob{h: e.h1, replicas: e.h.f.replicas}); err != nil {
		t.Fatalf("compact: %v", err)
	}
	for _, p := range e.comp.Pieces() {
		if n, err := e.s.api.BlockRefs(ctx, p); err == nil && n == 0 {
			e.s.store.mu.Lock()
			delete(e.s.store.blocks, p)
			e.s.store.mu.Unlock()
		}
	}
}

// readsBack fails the test when a fresh client does not read the model
// after an fsync that succeeded.
func readsBack[S block.Store](t *testing.T, api meta.API, stores map[string]S, ino meta.Ino, model []byte, ferr error) {
	t.Helper()
	if ferr != nil {
		return
	}
	fh, _, _, err := testClient(t, api, stores, Config{CompactAfter: -1}).OpenIno(context.Background(), ino, 0)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, len(model)+1)
	n, rerr := fh.Read(context.Background(), 0, buf)
	if rerr != nil || !bytes.Equal(buf[:n], model) {
		t.Fatalf("fsync succeeded, yet a fresh client reads %d bytes (equal %v), err %v", n, bytes.Equal(buf[:n], model), rerr)
	}
}

// TestWriteAfterCompactionKeepsData: the write comes after the compaction:
// it must build on h1 itself, not on the removed pieces, and succeed.
// Before, the fsync succeeded and a fresh client read "block not found".
func TestWriteAfterCompactionKeepsData(t *testing.T) {
	e := newComposedEnv(t)
	e.compactAndReclaim(t)
	write(t, e.h, 90000, []byte("second"))
	ferr := e.h.Fsync(context.Background())
	e.model = apply(e.model, 90000, []byte("second"))
	if ferr != nil {
		t.Fatalf("fsync of a write after the compaction: %v", ferr)
	}
	readsBack(t, e.s.api, map[string]*memStore{"b0": e.s.store}, e.in.Ino, e.model, ferr)
}

// TestComposeAcrossCompaction: the compaction comes while the write's
// patch upload is under way, its composition over h1's pieces chosen. The
// commit touches the inherited pieces first and fails with EIO (before,
// it succeeded over removed pieces).
func TestComposeAcrossCompaction(t *testing.T) {
	e := newComposedEnv(t)
	e.g.mu.Lock()
	e.g.armed = true
	e.g.mu.Unlock()
	done := make(chan error, 1)
	go func() {
		if _, err := e.h.Write(context.Background(), 90000, []byte("second")); err != nil {
			done <- err
			return
		}
		done <- e.h.Fsync(context.Background())
	}()
	<-e.g.hit // the patch upload started: its composition is chosen
	e.compactAndReclaim(t)
	close(e.g.open)
	ferr := <-done
	e.model = apply(e.model, 90000, []byte("second"))
	readsBack(t, e.s.api, map[string]*memStore{"b0": e.s.store}, e.in.Ino, e.model, ferr)
}

// TestWriteAfterCompactionReclaimer is TestWriteAfterCompactionKeepsData
// with the real reclaimer and disk stores.
func TestWriteAfterCompactionReclaimer(t *testing.T) {
	ctx := context.Background()
	svc, c, _, stores, _ := touchEnv(t)
	in := createFile(t, svc, "f")
	h := open(t, c, in.Ino)
	model := oneBlock(7)
	for _, w := range []struct {
		off  int64
		data []byte
	}{{0, model}, {5000, []byte("patched")}} {
		write(t, h, w.off, w.data)
		flush(t, h)
	}
	model = apply(model, 5000, []byte("patched"))
	r, err := svc.GetRecipe(ctx, in.Ino, 0, 1)
	if err != nil || len(r.Composed) != 1 {
		t.Fatalf("recipe after a small write: composed %v, %v; want one composed block", r.Composed, err)
	}
	if err := c.compact(ctx, compactJob{h: r.Blocks[0], replicas: h.f.replicas}); err != nil {
		t.Fatalf("compact: %v", err)
	}
	if _, err := reclaimerOf(svc, stores).Round(ctx); err != nil {
		t.Fatalf("reclaimer: %v", err)
	}
	write(t, h, 30000, []byte("second"))
	ferr := h.Fsync(ctx)
	model = apply(model, 30000, []byte("second"))
	if ferr != nil {
		t.Fatalf("fsync of a write after the compaction: %v", ferr)
	}
	readsBack(t, svc, stores, in.Ino, model, ferr)
}
