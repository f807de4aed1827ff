package meta

import (
	"bytes"
	"context"
	"errors"
	"math"
	"testing"

	"tessera/internal/block"
	"tessera/internal/kv/memkv"
)

func composeEnv(t *testing.T) (*Service, Inode) {
	t.Helper()
	svc, err := New(memkv.New(), Options{BlockSize: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	in, err := svc.Create(context.Background(), CreateReq{Parent: RootIno, Name: "f", Mode: 0o100644})
	if err != nil {
		t.Fatal(err)
	}
	return svc, in
}

func hashOf(s string) block.Hash { return block.Sum([]byte(s)) }

// TestComposedCommit: a composed block's composition is kept under its
// hash, handed out with the recipe, flattened when a change composes over a
// composed block, and refused past MaxPatches or outside the block.
func TestComposedCommit(t *testing.T) {
	ctx := context.Background()
	svc, in := composeEnv(t)
	base, h1, h2 := hashOf("base"), hashOf("v1"), hashOf("v2")
	p1 := Patch{Hash: hashOf("p1"), Off: 100, Len: 10}
	p2 := Patch{Hash: hashOf("p2"), Off: 200, Len: 20}
	commit := func(idx uint64, old, new block.Hash, c *Composition) error {
		_, err := svc.Commit(ctx, CommitReq{Ino: in.Ino, Size: 1000, Changes: []BlockChange{{Index: idx, Old: old, New: new, Compose: c}}})
		return err
	}
	if err := commit(0, block.Hash{}, base, nil); err != nil {
		t.Fatal(err)
	}
	if err := commit(0, base, h1, &Composition{Len: 1000, Base: base, Patches: []Patch{p1}}); err != nil {
		t.Fatal(err)
	}
	if err := commit(0, h1, h2, &Composition{Len: 1000, Base: h1, Patches: []Patch{p2}}); err != nil {
		t.Fatal(err)
	}
	r, err := svc.GetRecipe(ctx, in.Ino, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	c, ok := r.Composed[h2]
	if !ok || c.Base != base || len(c.Patches) != 2 || c.Patches[0] != p1 || c.Patches[1] != p2 {
		t.Fatalf("composition of the recipe's block: %+v (found %v); want base + p1 + p2, flattened", c, ok)
	}
	// The pieces are what gc, fsck and the mover see.
	var seen []block.Hash
	if err := svc.WalkBlocks(ctx, func(_ Ino, _ uint64, h block.Hash) error { seen = append(seen, h); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 3 || seen[0] != base || seen[1] != p1.Hash || seen[2] != p2.Hash {
		t.Fatalf("WalkBlocks: %v; want base, p1, p2", seen)
	}
	// A writer that based its change on v1 conflicts and learns how the
	// current block is made.
	err = commit(0, h1, hashOf("v3"), nil)
	var ce *ConflictError
	if !errors.As(err, &ce) || len(ce.Current) != 1 || ce.Current[0].New != h2 || ce.Current[0].Compose == nil || len(ce.Current[0].Compose.Patches) != 2 {
		t.Fatalf("conflict: %v; want the current composed block with its composition", err)
	}
	for _, bad := range []Composition{
		{Len: 1000, Base: base}, // no patch
		{Len: 1000, Base: base, Patches: []Patch{{Hash: p1.Hash, Off: 995, Len: 10}}}, // past the end
		{Len: 70 << 10, Base: base, Patches: []Patch{p1}},                             // longer than a block
	} {
		if err := commit(1, block.Hash{}, hashOf("bad"), &bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("composition %+v: %v; want ErrInvalid", bad, err)
		}
	}
	// Flattening stops at MaxPatches.
	cur := h2
	for i := 2; ; i++ {
		next := hashOf(string(rune('a' + i)))
		err := commit(0, cur, next, &Composition{Len: 1000, Base: cur, Patches: []Patch{p1}})
		if i < MaxPatches {
			if err != nil {
				t.Fatalf("patch %d: %v", i+1, err)
			}
			cur = next
			continue
		}
		if !errors.Is(err, ErrInvalid) {
			t.Fatalf("patch %d: %v; want ErrInvalid past MaxPatches", i+1, err)
		}
		break
	}
}

func TestCompositionRecord(t *testing.T) {
	c := Composition{Len: 4096, Base: hashOf("b"), Patches: []Patch{{Hash: hashOf("p"), Off: 10, Len: 20}, {Off: 100, Len: 5}}}
	enc := encodeComposition(c)
	got, err := decodeComposition(enc)
	if err != nil || got.Len != c.Len || got.Base != c.Base || len(got.Patches) != 2 || got.Patches[1] != c.Patches[1] {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	for i := 0; i < len(enc); i++ {
		if _, err := decodeComposition(enc[:i]); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("%d of %d bytes: %v; want ErrCorrupt", i, len(enc), err)
		}
	}
	if _, err := decodeComposition(append(bytes.Clone(enc), 0)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("trailing byte: %v; want ErrCorrupt", err)
	}
}

// TestComposedRefs: a composition holds a reference to each of its pieces
// (so the reclaimer keeps the base a recipe no longer names), and gives
// them up when its block loses its last reference or is stored whole
// (Decompose): then they are released.
func TestComposedRefs(t *testing.T) {
	ctx := context.Background()
	svc, in := composeEnv(t)
	base, h1, plain := hashOf("base"), hashOf("v1"), hashOf("plain")
	p1 := Patch{Hash: hashOf("p1"), Off: 100, Len: 10}
	commit := func(old, new block.Hash, c *Composition) {
		t.Helper()
		if _, err := svc.Commit(ctx, CommitReq{Ino: in.Ino, Size: 1000, Changes: []BlockChange{{Old: old, New: new, Compose: c}}}); err != nil {
			t.Fatal(err)
		}
	}
	refs := func(h block.Hash) uint64 {
		t.Helper()
		n, err := svc.BlockRefs(ctx, h)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	released := func() map[block.Hash]bool {
		t.Helper()
		rs, _, err := svc.Releases(ctx, Release{}, math.MaxInt64, 0)
		if err != nil {
			t.Fatal(err)
		}
		out := map[block.Hash]bool{}
		for _, r := range rs {
			if r.Refs == 0 {
				out[r.Hash] = true
			}
		}
		return out
	}
	commit(block.Hash{}, base, nil)
	commit(base, h1, &Composition{Len: 1000, Base: base, Patches: []Patch{p1}})
	if refs(base) != 1 || refs(p1.Hash) != 1 || refs(h1) != 1 {
		t.Fatalf("refs base %d, patch %d, block %d; want 1 each (the recipe names the block, the composition its pieces)", refs(base), refs(p1.Hash), refs(h1))
	}
	if rel := released(); rel[base] || rel[p1.Hash] {
		t.Fatalf("pieces of a live composed block released: %v", rel)
	}
	commit(h1, plain, nil)
	if refs(base) != 0 || refs(p1.Hash) != 0 || refs(h1) != 0 {
		t.Fatalf("after an overwrite refs base %d, patch %d, block %d; want 0", refs(base), refs(p1.Hash), refs(h1))
	}
	if rel := released(); !rel[base] || !rel[p1.Hash] || !rel[h1] {
		t.Fatalf("releases after the overwrite: %v; want the block and its pieces", rel)
	}
	// Stored whole, a composed block lets its pieces go.
	h2 := hashOf("v2")
	commit(plain, h2, &Composition{Len: 1000, Base: plain, Patches: []Patch{p1}})
	if refs(plain) != 1 {
		t.Fatalf("refs of the new base %d; want 1", refs(plain))
	}
	if err := svc.Decompose(ctx, h2); err != nil {
		t.Fatal(err)
	}
	if refs(plain) != 0 || refs(p1.Hash) != 0 || refs(h2) != 1 {
		t.Fatalf("after Decompose refs base %d, patch %d, block %d; want 0, 0, 1", refs(plain), refs(p1.Hash), refs(h2))
	}
	if r, _ := svc.GetRecipe(ctx, in.Ino, 0, 1); len(r.Composed) != 0 {
		t.Fatalf("composition still handed out after Decompose: %v", r.Composed)
	}
}
