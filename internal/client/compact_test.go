package client

import (
	"bytes"
	"context"
	"math/rand"
	"testing"
	"time"

	"tessera/internal/block"
	"tessera/internal/meta"
)

// composedFile writes a file of one block of n bytes on c, then a small
// write into it, committing each: the block's second version is composed.
// It returns the handle, the file's content and the composed hash.
func composedFile(t *testing.T, s *shared, c *Client, name string, n int) (*Handle, meta.Inode, []byte, block.Hash) {
	t.Helper()
	in := s.create(t, name)
	model := randBytes(rand.New(rand.NewSource(int64(n))), n)
	h := open(t, c, in.Ino)
	write(t, h, 0, model)
	flush(t, h)
	write(t, h, 100, []byte("patched"))
	flush(t, h)
	model = apply(model, 100, []byte("patched"))
	r, err := s.api.GetRecipe(context.Background(), in.Ino, 0, 1)
	if err != nil || len(r.Composed) != 1 {
		t.Fatalf("recipe after a small write: %d composed, %v; want 1", len(r.Composed), err)
	}
	var composed block.Hash
	for hh := range r.Composed {
		composed = hh
	}
	return h, in, model, composed
}

// TestCompactionKeepsNothingInMemory: storing a composed block whole
// leaves nothing of it in the memory cache — neither the version kept for
// the next small write (it has served compaction, the writer has rested)
// nor, when that was gone and the block was assembled, the block or its
// pieces. The tree job under posix (an untar) filled the cache with the
// bases and patches compaction fetched and the blocks it assembled, which
// nobody reads again: with kept versions limited to 4 MiB the daemon peaked
// at 223-237 MiB instead of 124-166, 60 MB of its heap in fetch buffers.
func TestCompactionKeepsNothingInMemory(t *testing.T) {
	const bs = 256 << 10
	ctx := context.Background()
	s := newShared(t, bs)
	stores := map[string]*memStore{"b0": s.store}
	c := testClient(t, s.api, stores, Config{CompactAfter: -1})

	// The kept version serves the compaction, then goes.
	h, in, model, composed := composedFile(t, s, c, "kept", bs/2)
	waitFor(t, func() bool { return c.mem.contains(composed) })
	if err := c.compact(ctx, compactJob{h: composed}); err != nil {
		t.Fatal(err)
	}
	if held, n := c.mem.heldBytes(); n != 0 {
		t.Fatalf("after compacting a block whose version was kept, the memory cache holds %d blocks (%d KiB)", n, held>>10)
	}
	h.Release(ctx)

	// Assembled from its pieces: nothing of them stays.
	h, in2, model2, composed2 := composedFile(t, s, c, "assembled", bs/2)
	waitFor(t, func() bool { return c.mem.contains(composed2) })
	c.mem.clear()
	if err := c.compact(ctx, compactJob{h: composed2}); err != nil {
		t.Fatal(err)
	}
	if held, n := c.mem.heldBytes(); n != 0 {
		t.Fatalf("after compacting a block assembled from its pieces, the memory cache holds %d blocks (%d KiB)", n, held>>10)
	}
	h.Release(ctx)
	if c.compacted.Load() != 2 {
		t.Fatalf("%d blocks compacted, want 2", c.compacted.Load())
	}

	// Both read back right, stored whole.
	fresh := testClient(t, s.api, stores, Config{CompactAfter: -1})
	for _, f := range []struct {
		ino   meta.Ino
		model []byte
	}{{in.Ino, model}, {in2.Ino, model2}} {
		if r, _ := s.api.GetRecipe(ctx, f.ino, 0, 1); len(r.Composed) != 0 {
			t.Fatalf("inode %d still composed after compaction", f.ino)
		}
		if got := readAt(t, open(t, fresh, f.ino), bs); !bytes.Equal(got, f.model) {
			t.Fatalf("inode %d reads something else after compaction (first difference at %d)", f.ino, firstDiff(got, f.model))
		}
	}
}

// TestCompactionAtLastClose: a file closed after most of a block was
// written since it was last stored whole (an untar's file, written in a
// few appends) has that block stored whole at once, and its kept version
// leaves the memory cache, rather than CompactAfter later: under an untar
// the kept versions of closed files otherwise filled their share of the
// cache (16 MiB) and most were evicted before their compaction, which then
// fetched and assembled the pieces. A block changed by a small write (a
// log's append) still waits for CompactAfter.
func TestCompactionAtLastClose(t *testing.T) {
	const bs = 256 << 10
	ctx := context.Background()
	s := newShared(t, bs)
	stores := map[string]*memStore{"b0": s.store}
	c := testClient(t, s.api, stores, Config{CompactAfter: time.Hour})

	// A small change to a large block: not worth storing whole at close.
	small, smallIn, _, smallH := composedFile(t, s, c, "log", bs/2)
	small.Release(ctx)

	// Written in three appends, each committed: inline, whole (past
	// meta.InlineMax), composed; the last version's patch is a third of it.
	in := s.create(t, "untarred")
	const part = 40 << 10
	model := randBytes(rand.New(rand.NewSource(3)), 3*part)
	h := open(t, c, in.Ino)
	for off := 0; off < len(model); off += part {
		write(t, h, int64(off), model[off:off+part])
		flush(t, h)
	}
	r, err := s.api.GetRecipe(ctx, in.Ino, 0, 1)
	if err != nil || len(r.Composed) != 1 {
		t.Fatalf("recipe after three appends: %d composed, %v; want 1", len(r.Composed), err)
	}
	var composed block.Hash
	for hh := range r.Composed {
		composed = hh
	}
	waitFor(t, func() bool { return c.mem.contains(composed) })
	h.Release(ctx)
	waitFor(t, func() bool { return c.compacted.Load() >= 1 })
	if r, _ := s.api.GetRecipe(ctx, in.Ino, 0, 1); len(r.Composed) != 0 {
		t.Fatal("the appended file is still composed after its close")
	}
	if c.mem.contains(composed) {
		t.Fatal("the appended file's kept version is still in the memory cache after its compaction")
	}
	if got := readAt(t, open(t, c, in.Ino), 1<<20); !bytes.Equal(got, model) {
		t.Fatalf("the appended file reads something else after compaction (first difference at %d)", firstDiff(got, model))
	}
	if n := c.compacted.Load(); n != 1 {
		t.Fatalf("%d blocks compacted; want 1 (the small change waits)", n)
	}
	if r, _ := s.api.GetRecipe(ctx, smallIn.Ino, 0, 1); len(r.Composed) != 1 || !c.mem.contains(smallH) {
		t.Fatal("the block changed by a small write was compacted at close")
	}
}

// TestSupersededCompositionsForgotten: a block committed composed again
// and again (appends under a policy that commits each) leaves the
// client-wide cache of compositions holding its latest composition only,
// not one per version with all the patches before it.
func TestSupersededCompositionsForgotten(t *testing.T) {
	const bs = 1 << 20
	ctx := context.Background()
	s := newShared(t, bs)
	stores := map[string]*memStore{"b0": s.store}
	c := testClient(t, s.api, stores, Config{CompactAfter: time.Hour})
	in := s.create(t, "appended")
	const part = 40 << 10
	model := randBytes(rand.New(rand.NewSource(5)), 8*part)
	h := open(t, c, in.Ino)
	for off := 0; off < len(model); off += part {
		write(t, h, int64(off), model[off:off+part])
		flush(t, h)
	}
	r, err := s.api.GetRecipe(ctx, in.Ino, 0, 1)
	if err != nil || len(r.Composed) != 1 {
		t.Fatalf("recipe after eight appends: %d composed, %v; want 1", len(r.Composed), err)
	}
	c.comps.mu.Lock()
	n := len(c.comps.m)
	c.comps.mu.Unlock()
	if n != 1 {
		t.Fatalf("after eight appends committed one by one the client holds %d compositions; want 1 (the latest)", n)
	}
	if got := readAt(t, open(t, testClient(t, s.api, stores, Config{CompactAfter: -1}), in.Ino), bs); !bytes.Equal(got, model) {
		t.Fatalf("a fresh client reads something else (first difference at %d)", firstDiff(got, model))
	}
	h.Release(ctx)
}
