package client

import (
	"bytes"
	"context"
	"flag"
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

var seedFlag = flag.Int64("client.seed", 0, "seed for TestRandomOps (0: time-based)")

// memStore is an in-memory block.Store for tests about the client's logic.
type memStore struct {
	mu     sync.Mutex
	blocks map[block.Hash][]byte
	puts   int
}

func (m *memStore) Put(ctx context.Context, h block.Hash, data []byte) error {
	if block.Sum(data) != h {
		return block.ErrHashMismatch
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.puts++
	m.blocks[h] = append([]byte(nil), data...)
	return nil
}

func (m *memStore) Get(ctx context.Context, h block.Hash) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.blocks[h]
	if !ok {
		return nil, block.ErrNotFound
	}
	return b, nil
}

func (m *memStore) Has(ctx context.Context, hs []block.Hash) ([]bool, error) {
	out := make([]bool, len(hs))
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, h := range hs {
		_, out[i] = m.blocks[h]
	}
	return out, nil
}

type env struct {
	api   *meta.Service
	store *memStore
	c     *Client
}

func newEnv(t *testing.T, blockSize uint32, dirty int64) *env {
	t.Helper()
	ctx := context.Background()
	svc, err := meta.New(memkv.New(), meta.Options{BlockSize: blockSize})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.RegisterServer(ctx, meta.Server{ID: "b0", Addr: "mem", State: "up"}); err != nil {
		t.Fatal(err)
	}
	st := &memStore{blocks: make(map[block.Hash][]byte)}
	c, err := New(ctx, Config{
		Meta:       svc,
		Dial:       func(meta.Server) (block.Store, error) { return st, nil },
		Logger:     slog.New(slog.DiscardHandler),
		DirtyBytes: dirty,
		// A small memory cache makes reads go back to the store.
		MemCacheBytes: int64(blockSize) * 2,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return &env{api: svc, store: st, c: c}
}

func (e *env) create(t *testing.T, name string) meta.Inode {
	t.Helper()
	return createFile(t, e.api, name)
}

// createFile creates the regular file name in the root through api.
func createFile(t testing.TB, api meta.API, name string) meta.Inode {
	t.Helper()
	in, err := api.Create(context.Background(), meta.CreateReq{Parent: meta.RootIno, Name: name, Mode: 0o100644, Excl: true})
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func (e *env) readAll(t *testing.T, ino meta.Ino) []byte {
	t.Helper()
	ctx := context.Background()
	in, err := e.api.GetAttr(ctx, ino)
	if err != nil {
		t.Fatal(err)
	}
	h, _, _ := e.c.Open(ctx, in, 0)
	defer h.Release(ctx)
	buf := make([]byte, in.Size+10)
	n, err := h.Read(ctx, 0, buf)
	if err != nil {
		t.Fatal(err)
	}
	return buf[:n]
}

func TestWriteCommitRead(t *testing.T) {
	const bs = 64 << 10
	e := newEnv(t, bs, 0)
	ctx := context.Background()
	in := e.create(t, "f")
	h, _, _ := e.c.Open(ctx, in, 0)
	data := make([]byte, 3*bs+123)
	rand.New(rand.NewSource(1)).Read(data)
	if _, err := h.Write(ctx, 0, data); err != nil {
		t.Fatal(err)
	}
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
	got := e.readAll(t, in.Ino)
	if !bytes.Equal(got, data) {
		t.Fatalf("read back %d bytes, differ from the %d written", len(got), len(data))
	}
	r, err := e.api.GetRecipe(ctx, in.Ino, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Blocks) != 4 || r.Size != uint64(len(data)) {
		t.Fatalf("recipe has %d blocks, size %d; want 4, %d", len(r.Blocks), r.Size, len(data))
	}
}

func TestSmallFileIsInline(t *testing.T) {
	e := newEnv(t, 64<<10, 0)
	ctx := context.Background()
	in := e.create(t, "small")
	h, _, _ := e.c.Open(ctx, in, 0)
	h.Write(ctx, 0, []byte("hello, tessera"))
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := e.api.GetAttr(ctx, in.Ino)
	if err != nil {
		t.Fatal(err)
	}
	if !got.HasInline || string(got.Inline) != "hello, tessera" {
		t.Fatalf("inode inline=%v %q; want the content inline", got.HasInline, got.Inline)
	}
	if e.store.puts != 0 {
		t.Fatalf("%d blocks uploaded for an inline file", e.store.puts)
	}
}

// TestInlineLimit: a file of meta.InlineMax bytes written in small pieces
// (as tar writes) is committed inline when the block is larger, a byte more
// goes to a block; a file that fills its whole first block is uploaded even
// when the block is no larger than meta.InlineMax.
func TestInlineLimit(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		bs     uint32
		size   int
		inline bool
	}{
		{4 << 20, meta.InlineMax, true},
		{4 << 20, meta.InlineMax + 1, false},
		{meta.InlineMax, meta.InlineMax, false},
		{meta.InlineMax, meta.InlineMax - 1, true},
	} {
		e := newEnv(t, tc.bs, 0)
		in := e.create(t, "f")
		h, _, _ := e.c.Open(ctx, in, 0)
		data := bytes.Repeat([]byte("0123456789"), tc.size/10+1)[:tc.size]
		for off := 0; off < len(data); off += 10240 {
			if _, err := h.Write(ctx, int64(off), data[off:min(off+10240, len(data))]); err != nil {
				t.Fatal(err)
			}
		}
		if err := h.Release(ctx); err != nil {
			t.Fatal(err)
		}
		got, err := e.api.GetAttr(ctx, in.Ino)
		if err != nil {
			t.Fatal(err)
		}
		if got.HasInline != tc.inline || (e.store.puts == 0) != tc.inline {
			t.Fatalf("block size %d, %d bytes: inline=%v, %d blocks uploaded; want inline=%v", tc.bs, tc.size, got.HasInline, e.store.puts, tc.inline)
		}
		if back := e.readAll(t, in.Ino); !bytes.Equal(back, data) {
			t.Fatalf("block size %d, %d bytes: read back %d bytes that differ", tc.bs, tc.size, len(back))
		}
	}
}

func TestZeroBlocksAreHoles(t *testing.T) {
	const bs = 64 << 10
	e := newEnv(t, bs, 0)
	ctx := context.Background()
	in := e.create(t, "sparse")
	h, _, _ := e.c.Open(ctx, in, 0)
	h.Write(ctx, 10*bs, []byte("end"))
	h.Write(ctx, 0, make([]byte, bs)) // an explicit block of zeros
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if e.store.puts != 1 {
		t.Fatalf("%d uploads; want 1 (only the last block holds data)", e.store.puts)
	}
	got := e.readAll(t, in.Ino)
	if len(got) != 10*bs+3 || !block.AllZero(got[:10*bs]) || string(got[10*bs:]) != "end" {
		t.Fatalf("sparse file reads back wrong (len %d)", len(got))
	}
}

// TestDirtyMemoryBounded writes far more than the dirty budget and checks
// that the budget held and everything arrived.
func TestDirtyMemoryBounded(t *testing.T) {
	const bs = 64 << 10
	e := newEnv(t, bs, 4*bs)
	ctx := context.Background()
	var peak int64
	for i := 0; i < 4; i++ {
		in := e.create(t, fmt.Sprintf("f%d", i))
		h, _, _ := e.c.Open(ctx, in, 0)
		chunk := bytes.Repeat([]byte{byte(i + 1)}, 1000)
		for off := int64(0); off < 40*bs; off += int64(len(chunk)) {
			if _, err := h.Write(ctx, off, chunk); err != nil {
				t.Fatal(err)
			}
			peak = max(peak, e.c.budget.inUse())
		}
		defer h.Release(ctx)
	}
	// One block of overshoot per writer is allowed while uploads drain.
	if peak > 5*bs {
		t.Fatalf("dirty bytes peaked at %d; budget %d", peak, 4*bs)
	}
}

// TestRandomOps applies random writes, truncates, reads and commits to the
// client and to a byte-slice model, comparing every read.
func TestRandomOps(t *testing.T) {
	seed := *seedFlag
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	t.Logf("seed %d (replay with -client.seed=%d)", seed, seed)
	rng := rand.New(rand.NewSource(seed))
	const bs = 16 << 10
	e := newEnv(t, bs, 8*bs)
	ctx := context.Background()
	in := e.create(t, "r")
	h, _, _ := e.c.Open(ctx, in, 0)
	var model []byte
	ops := 3000
	if testing.Short() {
		ops = 500
	}
	var log []string
	fail := func(format string, args ...any) {
		t.Helper()
		start := max(0, len(log)-15)
		t.Fatalf("seed %d: "+format+"\nlast ops:\n%s", append([]any{seed}, append(args, fmt.Sprint(log[start:]))...)...)
	}
	for i := 0; i < ops; i++ {
		switch op := rng.Intn(10); {
		case op < 5:
			off := rng.Int63n(6 * bs)
			n := 1 + rng.Intn(2*bs)
			if rng.Intn(4) == 0 {
				n = 1 + rng.Intn(16)
			}
			data := make([]byte, n)
			rng.Read(data)
			if rng.Intn(5) == 0 {
				clear(data)
			}
			log = append(log, fmt.Sprintf("write off=%d n=%d", off, n))
			if _, err := h.Write(ctx, off, data); err != nil {
				fail("write: %v", err)
			}
			if end := int(off) + n; end > len(model) {
				model = append(model, make([]byte, end-len(model))...)
			}
			copy(model[off:], data)
		case op < 7:
			off := rng.Int63n(7 * bs)
			n := 1 + rng.Intn(3*bs)
			log = append(log, fmt.Sprintf("read off=%d n=%d", off, n))
			buf := make([]byte, n)
			got, err := h.Read(ctx, off, buf)
			if err != nil {
				fail("read: %v", err)
			}
			want := []byte{}
			if int(off) < len(model) {
				want = model[off:min(len(model), int(off)+n)]
			}
			if !bytes.Equal(buf[:got], want) {
				fail("op %d: read off=%d n=%d: got %d bytes, want %d, contents differ", i, off, n, got, len(want))
			}
		case op < 8:
			size := rng.Int63n(6 * bs)
			log = append(log, fmt.Sprintf("truncate %d", size))
			cur, _ := e.api.GetAttr(ctx, in.Ino)
			if _, err := e.c.Truncate(ctx, cur, size); err != nil {
				fail("truncate: %v", err)
			}
			if int(size) < len(model) {
				model = model[:size]
			} else {
				model = append(model, make([]byte, int(size)-len(model))...)
			}
		case op < 9:
			log = append(log, "flush")
			if err := h.Flush(ctx); err != nil {
				fail("flush: %v", err)
			}
		default:
			log = append(log, "reopen")
			if err := h.Release(ctx); err != nil {
				fail("release: %v", err)
			}
			cur, _ := e.api.GetAttr(ctx, in.Ino)
			if cur.Size != uint64(len(model)) {
				fail("op %d: committed size %d, model %d", i, cur.Size, len(model))
			}
			h, _, _ = e.c.Open(ctx, cur, 0)
		}
	}
	h.Release(ctx)
	if got := e.readAll(t, in.Ino); !bytes.Equal(got, model) {
		fail("final content differs: %d bytes vs model %d", len(got), len(model))
	}
	// One client alone never conflicts with itself.
	if st := e.c.Stats(); st.Conflicts != 0 {
		fail("%d commit conflicts with a single client", st.Conflicts)
	}
}
