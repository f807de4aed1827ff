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

// allocStore is a memStore that reads into the caller's buffers, as the
// block servers' client does (allocGetter), and scribbles over the tail
// of every buffer it is given first, as a read into reused memory would.
type allocStore struct {
	*memStore
	allocs int
	mu     sync.Mutex
}

func (s *allocStore) GetAlloc(ctx context.Context, h block.Hash, alloc func(n int) []byte) ([]byte, error) {
	data, err := s.memStore.Get(ctx, h)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.allocs++
	s.mu.Unlock()
	buf := alloc(len(data))
	if cap(buf) < len(data) {
		buf = make([]byte, len(data), len(data)+hashSlack)
	}
	buf = buf[:len(data)]
	for i := range buf {
		buf[i] = 0xee // a reader of this memory sees it change
	}
	copy(buf, data)
	return buf, nil
}

// newPoolEnv is newEnv with a store that reads into pooled buffers, a
// memory cache of cacheBlocks blocks and a pool of poolBlocks.
func newPoolEnv(t *testing.T, bs int64, cacheBlocks, poolBlocks int) (*env, *allocStore) {
	return newPoolEnvIdle(t, bs, cacheBlocks, poolBlocks, 0)
}

// newPoolEnvIdle is newPoolEnv with Config.IdleRelease idle.
func newPoolEnvIdle(t *testing.T, bs int64, cacheBlocks, poolBlocks int, idle time.Duration) (*env, *allocStore) {
	t.Helper()
	ctx := context.Background()
	svc, err := meta.New(memkv.New(), meta.Options{BlockSize: uint32(bs)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.RegisterServer(ctx, meta.Server{ID: "b0", Addr: "mem", State: "up"}); err != nil {
		t.Fatal(err)
	}
	st := &allocStore{memStore: &memStore{blocks: make(map[block.Hash][]byte)}}
	c, err := New(ctx, Config{
		Meta:            svc,
		Dial:            func(meta.Server) (block.Store, error) { return st, nil },
		Logger:          slog.New(slog.DiscardHandler),
		MemCacheBytes:   bs * int64(cacheBlocks),
		ReadAheadBlocks: 2,
	})
	if err != nil {
		t.Fatal(err)
	}
	c.pool = newFetchPool((bs + hashSlack) * int64(poolBlocks))
	if idle > 0 {
		// Started here, not by New (Config.IdleRelease): the loop reads
		// c.pool, which must be set before it runs (a race otherwise).
		c.active.touch(time.Now())
		c.loops.Add(1)
		go func() {
			defer c.loops.Done()
			c.releaseIdle(idle, c.stop)
		}()
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return &env{api: svc, store: st.memStore, c: c}, st
}

// writeFiles writes n files of blocks blocks of random bytes.
func writeFiles(t *testing.T, e *env, n, blocks int, bs int64) ([]meta.Ino, [][]byte) {
	t.Helper()
	ctx := context.Background()
	var inos []meta.Ino
	var datas [][]byte
	for i := range n {
		in := e.create(t, fmt.Sprintf("f%d", i))
		data := make([]byte, int64(blocks)*bs)
		rand.New(rand.NewSource(int64(i))).Read(data)
		h, _, _ := e.c.Open(ctx, in, 0)
		if _, err := h.Write(ctx, 0, data); err != nil {
			t.Fatal(err)
		}
		if err := h.Release(ctx); err != nil {
			t.Fatal(err)
		}
		inos, datas = append(inos, in.Ino), append(datas, data)
	}
	return inos, datas
}

// A pooled buffer is reused only once nothing holds it: not while a reader
// has it from the cache, though the cache evicted it.
func TestFetchPoolReusesOnlyReleased(t *testing.T) {
	const n = 100 << 10
	p := newFetchPool(4 * (n + hashSlack))
	mc := newMemCache(n)
	hs := testHashes(2)
	fresh := func() *blockBuf {
		data := p.get(n)
		if data != nil {
			t.Fatal("the pool had a buffer before any was released")
		}
		return newBlockBuf(make([]byte, n, n+hashSlack), true, p)
	}
	a := fresh()
	mc.put(hs[0], a)
	a.release() // the fetch's reference: the cache holds it now
	r := mc.get(hs[0])
	if r != a {
		t.Fatal("cache miss")
	}
	b := fresh()
	mc.put(hs[1], b) // evicts a, still read
	b.release()
	if mc.contains(hs[0]) {
		t.Fatal("a was not evicted")
	}
	if got := p.get(n); got != nil {
		t.Fatal("the pool gave out a buffer a reader still holds")
	}
	r.release()
	got := p.get(n)
	if got == nil || &got[:1][0] != &a.data[:1][0] {
		t.Fatal("the released buffer did not go to the pool")
	}
	if p.get(n) != nil {
		t.Fatal("one buffer given out twice")
	}
	// A pinned block never goes to the pool.
	k := newBlockBuf(make([]byte, n, n+hashSlack), true, p)
	k.keep()
	k.release()
	// Buffers of another size are not given for a block of this one.
	o := newBlockBuf(make([]byte, 2*n, 2*n+hashSlack), true, p)
	o.release()
	if p.get(n) != nil {
		t.Fatal("the pool gave out a pinned buffer or one of another size")
	}
}

// The pool keeps at most its bound, dropping the oldest buffers.
func TestFetchPoolBounded(t *testing.T) {
	const n = 100 << 10
	p := newFetchPool(2 * (n + hashSlack))
	var bufs [][]byte
	for range 3 {
		b := make([]byte, n, n+hashSlack)
		bufs = append(bufs, b)
		p.put(b)
	}
	p.mu.Lock()
	held, bytes := len(p.mu.free), p.mu.bytes
	p.mu.Unlock()
	if held != 2 || bytes != 2*(n+hashSlack) {
		t.Fatalf("pool holds %d buffers, %d bytes; want 2, %d", held, bytes, 2*(n+hashSlack))
	}
	for _, want := range []int{2, 1} { // newest first; the oldest was dropped
		if got := p.get(n); &got[:1][0] != &bufs[want][:1][0] {
			t.Fatalf("got a buffer other than #%d", want)
		}
	}
	p.put(make([]byte, 10))
	p.drain()
	if p.get(n) != nil || p.get(10-hashSlack+hashSlack) != nil {
		t.Fatal("buffers after drain")
	}
}

// Bytes handed out by getBlock (kept by a writer's base, a composition,
// a compaction) stay as they were while reads churn the cache and reuse
// every other buffer.
func TestFetchPoolNeverReusesKeptBlock(t *testing.T) {
	const bs = 64 << 10
	e, st := newPoolEnv(t, bs, 2, 8)
	ctx := context.Background()
	inos, datas := writeFiles(t, e, 6, 3, bs)
	r, err := e.api.GetRecipe(ctx, inos[0], 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	kept, err := e.c.getBlock(ctx, r.Blocks[0], true)
	if err != nil {
		t.Fatal(err)
	}
	want := bytes.Clone(datas[0][:bs])
	if !bytes.Equal(kept, want) {
		t.Fatal("getBlock returned other bytes")
	}
	for round := range 3 {
		for i, ino := range inos {
			if got := e.readAll(t, ino); !bytes.Equal(got, datas[i]) {
				t.Fatalf("round %d: file %d read back wrong", round, i)
			}
		}
	}
	if !bytes.Equal(kept, want) {
		t.Fatal("a block handed out by getBlock was overwritten by a later fetch")
	}
	if e.c.pool.reused.Load() == 0 {
		t.Fatalf("no fetch reused a buffer (%d fetches): the test shows nothing", st.allocs)
	}
}

// Readers of several files at once, with a cache of two blocks, each
// sharing fetches with the others and with read-ahead, always read their
// own bytes; some give up early (cancelled) while waiting for a shared
// fetch. Run with -race.
func TestFetchPoolConcurrentReaders(t *testing.T) {
	const bs = 64 << 10
	e, _ := newPoolEnv(t, bs, 2, 4)
	inos, datas := writeFiles(t, e, 4, 4, bs)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for w := range 8 {
		wg.Go(func() {
			rng := rand.New(rand.NewSource(int64(w)))
			for range 30 {
				i := rng.Intn(len(inos))
				in, err := e.api.GetAttr(ctx, inos[i])
				if err != nil {
					errs <- err
					return
				}
				rctx, cancel := context.WithCancel(ctx)
				if rng.Intn(4) == 0 {
					cancel() // waits for shared fetches end at once
				}
				h, _, err := e.c.Open(ctx, in, 0)
				if err != nil {
					cancel()
					errs <- err
					return
				}
				off := int64(rng.Intn(int(in.Size)))
				buf := make([]byte, 1+rng.Intn(2*bs))
				n, err := h.Read(rctx, off, buf)
				cancel()
				h.Release(ctx)
				if err != nil {
					if rctx.Err() != nil {
						continue
					}
					errs <- err
					return
				}
				if !bytes.Equal(buf[:n], datas[i][off:off+int64(n)]) {
					errs <- fmt.Errorf("file %d at %d: %d bytes read differ", i, off, n)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if e.c.pool.reused.Load() == 0 {
		t.Fatal("no fetch reused a buffer: the test shows nothing")
	}
}

// An idle client gives its spare fetch buffers back with its cached blocks.
func TestIdleReleaseDrainsFetchPool(t *testing.T) {
	const bs = 64 << 10
	e, _ := newPoolEnvIdle(t, bs, 2, 8, 50*time.Millisecond)
	inos, datas := writeFiles(t, e, 1, 6, bs)
	if got := e.readAll(t, inos[0]); !bytes.Equal(got, datas[0]) {
		t.Fatal("read back wrong")
	}
	spare := func() int64 {
		e.c.pool.mu.Lock()
		defer e.c.pool.mu.Unlock()
		return e.c.pool.mu.bytes
	}
	if spare() == 0 {
		t.Fatal("no spare fetch buffer after reading 6 blocks through a cache of 2: the test shows nothing")
	}
	n := e.c.Stats().IdleReleases
	waitFor(t, func() bool { return e.c.Stats().IdleReleases > n })
	if b := spare(); b != 0 {
		t.Fatalf("%d bytes of fetch buffers kept after the client went idle; want 0", b)
	}
}
