package client

import (
	"bytes"
	"context"
	"math/rand"
	"sync"
	"testing"
	"time"

	"tessera/internal/block"
	"tessera/internal/meta"
)

// sentStore counts the bytes Put into a memStore.
type sentStore struct {
	*memStore
	mu   sync.Mutex
	sent int64
}

func (s *sentStore) Put(ctx context.Context, h block.Hash, data []byte) error {
	s.mu.Lock()
	s.sent += int64(len(data))
	s.mu.Unlock()
	return s.memStore.Put(ctx, h, data)
}

func (s *sentStore) bytesSent() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sent
}

// TestSmallOverwritesSendWhatTheyWrite: random small overwrites with fsync
// into a file of large blocks send about what they write (patches), not a
// block each; the content stays right for this client and for a fresh one
// reading the composed blocks; compositions stay within MaxPatches (a block
// with too many patches is uploaded whole again).
func TestSmallOverwritesSendWhatTheyWrite(t *testing.T) {
	const bs = 256 << 10
	const fileSize = 4 * bs
	ctx := context.Background()
	s := newShared(t, bs)
	st := &sentStore{memStore: s.store}
	c := testClient(t, s.api, map[string]*sentStore{"b0": st}, Config{})
	in := s.create(t, "f")
	rng := rand.New(rand.NewSource(10))
	model := randBytes(rng, fileSize)
	h := open(t, c, in.Ino)
	write(t, h, 0, model)
	if err := h.Fsync(ctx); err != nil {
		t.Fatal(err)
	}
	before := st.bytesSent()
	const writes, size = 200, 4 << 10
	for i := 0; i < writes; i++ {
		off := rng.Int63n(fileSize - size)
		data := randBytes(rng, size)
		write(t, h, off, data)
		copy(model[off:], data)
		if err := h.Fsync(ctx); err != nil {
			t.Fatalf("fsync %d: %v", i, err)
		}
		if i%50 == 49 {
			if got := readAt(t, h, fileSize+1); !bytes.Equal(got, model) {
				t.Fatalf("after %d overwrites this client reads something else (first difference at %d)", i+1, firstDiff(got, model))
			}
		}
	}
	sent := st.bytesSent() - before
	t.Logf("%d overwrites of %d bytes sent %d bytes (%.2f per byte written)", writes, size, sent, float64(sent)/float64(writes*size))
	// Every MaxPatches-th change of a block uploads it whole: that bounds
	// what compaction costs, amortized, at about bs/MaxPatches per write.
	if limit := int64(writes) * (2*size + bs/meta.MaxPatches); sent > limit {
		t.Fatalf("%d small overwrites sent %d bytes; want at most %d", writes, sent, limit)
	}
	r, err := s.api.GetRecipe(ctx, in.Ino, 0, 16)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Composed) == 0 {
		t.Fatal("no block of the file is composed")
	}
	for hh, comp := range r.Composed {
		if len(comp.Patches) > meta.MaxPatches {
			t.Fatalf("block %s has %d patches", hh.Short(), len(comp.Patches))
		}
	}
	h.Release(ctx)
	fresh := testClient(t, s.api, map[string]*sentStore{"b0": st}, Config{})
	if got := readAt(t, open(t, fresh, in.Ino), fileSize+1); !bytes.Equal(got, model) {
		t.Fatalf("a fresh client reads something else (first difference at %d of %d)", firstDiff(got, model), len(got))
	}
}

// TestComposedConflictRedo: two clients change disjoint ranges of one
// block; the second one's commit conflicts with the first one's composed
// block and its redo reads that composition, so both changes survive.
func TestComposedConflictRedo(t *testing.T) {
	const bs = 256 << 10
	ctx := context.Background()
	s := newShared(t, bs)
	in := s.create(t, "f")
	want := randBytes(rand.New(rand.NewSource(11)), 2*bs)
	s.fill(t, in.Ino, want)
	a := open(t, s.client(t, nil, nil, nil), in.Ino)
	b := open(t, s.client(t, nil, nil, nil), in.Ino)
	readAt(t, a, 10) // both know the committed recipe
	readAt(t, b, 10)
	write(t, a, 1000, []byte("written by A"))
	write(t, b, 9000, []byte("written by B"))
	flush(t, a)
	flush(t, b)
	want = apply(apply(want, 1000, []byte("written by A")), 9000, []byte("written by B"))
	if got := s.content(t, in.Ino); !bytes.Equal(got, want) {
		t.Fatalf("content differs at %d", firstDiff(got, want))
	}
	r, _ := s.api.GetRecipe(ctx, in.Ino, 0, 2)
	t.Logf("%d composed block(s) after the redo", len(r.Composed))
	_ = ctx
}

// TestComposedAfterTruncate: a block cut by a truncate is uploaded whole,
// and a file truncated and grown again reads zeros where it was cut.
func TestComposedAfterTruncate(t *testing.T) {
	const bs = 256 << 10
	ctx := context.Background()
	s := newShared(t, bs)
	c := s.client(t, nil, nil, nil)
	in := s.create(t, "f")
	want := randBytes(rand.New(rand.NewSource(12)), bs)
	h := open(t, c, in.Ino)
	write(t, h, 0, want)
	flush(t, h)
	write(t, h, 100, []byte("patch"))
	flush(t, h)
	cur, _ := s.api.GetAttr(ctx, in.Ino)
	if _, err := c.Truncate(ctx, cur, 1000); err != nil {
		t.Fatal(err)
	}
	write(t, h, 5000, []byte("after"))
	flush(t, h)
	model := apply(want, 100, []byte("patch"))[:1000]
	model = apply(model, 5000, []byte("after"))
	h.Release(ctx)
	if got := s.content(t, in.Ino); !bytes.Equal(got, model) {
		t.Fatalf("content differs at %d (len %d, want %d)", firstDiff(got, model), len(got), len(model))
	}
}

// TestComposedBlocksCompacted: a composed block left unchanged for
// CompactAfter is uploaded whole and decomposed, so its pieces can go; a
// reader that still holds the composition and finds the pieces gone reads
// the whole block.
func TestComposedBlocksCompacted(t *testing.T) {
	const bs = 256 << 10
	ctx := context.Background()
	s := newShared(t, bs)
	stores := map[string]*memStore{"b0": s.store}
	c := testClient(t, s.api, stores, Config{CompactAfter: 20 * time.Millisecond})
	reader := testClient(t, s.api, stores, Config{CompactAfter: -1})
	in := s.create(t, "f")
	model := randBytes(rand.New(rand.NewSource(14)), 2*bs)
	h := open(t, c, in.Ino)
	write(t, h, 0, model)
	flush(t, h)
	write(t, h, 5000, []byte("patched"))
	flush(t, h)
	model = apply(model, 5000, []byte("patched"))
	r, err := s.api.GetRecipe(ctx, in.Ino, 0, 2)
	if err != nil || len(r.Composed) != 1 {
		t.Fatalf("recipe after a small write: %d composed, %v; want 1", len(r.Composed), err)
	}
	var composed block.Hash
	var comp meta.Composition
	for hh, cc := range r.Composed {
		composed, comp = hh, cc
	}
	// The reader learns the composition and reads through it.
	if got := readAt(t, open(t, reader, in.Ino), 2*bs+1); !bytes.Equal(got, model) {
		t.Fatalf("reader through the composition: differs at %d", firstDiff(got, model))
	}
	waitFor(t, func() bool { return c.compacted.Load() >= 1 })
	if r, _ := s.api.GetRecipe(ctx, in.Ino, 0, 2); len(r.Composed) != 0 {
		t.Fatalf("still composed after compaction: %v", r.Composed)
	}
	if n, _ := s.api.BlockRefs(ctx, comp.Base); n != 0 {
		t.Fatalf("the old base still has %d references after compaction", n)
	}
	// The pieces are reclaimed; the reader's cached composition fails over
	// to the whole block.
	s.store.mu.Lock()
	for _, p := range comp.Pieces() {
		delete(s.store.blocks, p)
	}
	s.store.mu.Unlock()
	reader.mem.clear()
	if _, ok := reader.comps.get(composed); !ok {
		t.Fatal("the reader does not hold the composition")
	}
	if got := readAt(t, open(t, reader, in.Ino), 2*bs+1); !bytes.Equal(got, model) {
		t.Fatalf("reader after the pieces went: differs at %d", firstDiff(got, model))
	}
}

// TestComposedRandomModel: seeded random small writes, truncates (shrink
// and grow: holes), reads and commits on one client, with compaction
// running (CompactAfter 2 ms) — checked against a byte array after every
// operation on the writer and after every commit by a second client that
// reads the committed file (through compositions it learns from the
// recipe, or whole blocks once compacted).
func TestComposedRandomModel(t *testing.T) {
	seed := *seedFlag
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	t.Logf("seed %d (replay with -client.seed=%d)", seed, seed)
	rng := rand.New(rand.NewSource(seed))
	const bs = 64 << 10
	ctx := context.Background()
	s := newShared(t, bs)
	stores := map[string]*memStore{"b0": s.store}
	w := testClient(t, s.api, stores, Config{CompactAfter: 2 * time.Millisecond})
	r := testClient(t, s.api, stores, Config{CompactAfter: -1})
	in := s.create(t, "f")
	h := open(t, w, in.Ino)
	model := randBytes(rng, 4*bs)
	write(t, h, 0, model)
	flush(t, h)
	committed := bytes.Clone(model)
	sawComposed := false
	for i := 0; i < 400; i++ {
		switch op := rng.Intn(20); {
		case op < 12:
			off := rng.Int63n(int64(len(model)) + bs/2)
			data := randBytes(rng, 1+rng.Intn(8<<10))
			write(t, h, off, data)
			if end := int(off) + len(data); end > len(model) {
				model = append(model, make([]byte, end-len(model))...)
			}
			copy(model[off:], data)
		case op < 14:
			size := rng.Int63n(5 * bs)
			cur, err := s.api.GetAttr(ctx, in.Ino)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.Truncate(ctx, cur, size); err != nil {
				t.Fatalf("seed %d op %d: truncate %d: %v", seed, i, size, err)
			}
			if int(size) < len(model) {
				model = model[:size]
			} else {
				model = append(model, make([]byte, int(size)-len(model))...)
			}
			committed = bytes.Clone(model)
		case op < 17:
			flush(t, h)
			committed = bytes.Clone(model)
			if rec, _ := s.api.GetRecipe(ctx, in.Ino, 0, 8); len(rec.Composed) > 0 {
				sawComposed = true
			}
			rh := open(t, r, in.Ino)
			if got := readAt(t, rh, len(committed)+1); !bytes.Equal(got, committed) {
				t.Fatalf("seed %d op %d: the reader sees %d bytes, want %d (first difference at %d)", seed, i, len(got), len(committed), firstDiff(got, committed))
			}
			rh.Release(ctx)
		default:
			if got := readAt(t, h, len(model)+1); !bytes.Equal(got, model) {
				t.Fatalf("seed %d op %d: the writer sees %d bytes, want %d (first difference at %d)", seed, i, len(got), len(model), firstDiff(got, model))
			}
		}
	}
	if !sawComposed {
		t.Fatalf("seed %d: no commit left a composed block: the test did not test compositions", seed)
	}
	t.Logf("%d composed blocks stored whole during the run", w.compacted.Load())
}
