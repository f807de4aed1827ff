package client

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math/rand"
	"runtime"
	"testing"

	"tessera/internal/block"
	"tessera/internal/meta"
)

// heldBytes is the capacity of the buffers the cache holds (the memory it
// keeps alive, whatever it counts) and how many they are.
func (c *memCache) heldBytes() (bytes int64, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for e := c.mu.ll.Front(); e != nil; e = e.Next() {
		bytes += int64(cap(e.Value.(*memEntry).buf.data))
		n++
	}
	return bytes, n
}

// longerThan counts the blocks the cache holds of more than n bytes.
func (c *memCache) longerThan(n int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := 0
	for e := c.mu.ll.Front(); e != nil; e = e.Next() {
		if len(e.Value.(*memEntry).buf.data) > n {
			k++
		}
	}
	return k
}

// TestSmallCommittedAppendsStayWithinTheCache: a file of the default 4
// MiB blocks appended to a page at a time with an fsync after each page
// (an SQLite WAL) keeps no more memory alive than the memory cache's
// bound, and a small write allocates about the block's length, not the
// block size. (Each write copied the block into a buffer of the whole
// block size, which the cache kept after the composed upload while
// counting only its length: 1.36 GB under two SQLite writers.)
func TestSmallCommittedAppendsStayWithinTheCache(t *testing.T) {
	const bs = meta.DefaultBlockSize
	const cacheBytes = 16 << 20
	ctx := context.Background()
	s := newShared(t, bs)
	c := testClient(t, s.api, map[string]*memStore{"b0": s.store}, Config{MemCacheBytes: cacheBytes})
	in := s.create(t, "wal")
	rng := rand.New(rand.NewSource(23))
	model := randBytes(rng, 64<<10)
	h := open(t, c, in.Ino)
	write(t, h, 0, model)
	if err := h.Fsync(ctx); err != nil {
		t.Fatal(err)
	}
	const pages, page = 100, 4 << 10
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := range pages {
		data := randBytes(rng, page)
		write(t, h, int64(len(model)), data)
		model = append(model, data...)
		if err := h.Fsync(ctx); err != nil {
			t.Fatalf("fsync %d: %v", i, err)
		}
		// The bound allows the hasher's slack past each block (charge).
		if held, n := c.mem.heldBytes(); held > cacheBytes+int64(n)*hashSlack {
			t.Fatalf("after %d appends the memory cache keeps %d KiB alive in %d blocks; its bound is %d KiB", i+1, held>>10, n, cacheBytes>>10)
		}
	}
	runtime.ReadMemStats(&after)
	c.bg.Wait() // the last upload's goroutine keeps its buffer in the cache
	// One version of the block is kept in the cache, not one per commit;
	// the file remembers the compositions its blocks name, not all. (The
	// cache may also hold the pieces of a version it assembled: the base
	// of the composition and the small patches.)
	if n := c.mem.longerThan(64 << 10); n > 2 {
		t.Errorf("the memory cache holds %d versions of the file's one block; want the latest and its base", n)
	}
	f := h.f
	f.mu.Lock()
	nc := len(f.comps)
	f.mu.Unlock()
	if nc > 64+2 {
		t.Errorf("the file holds %d compositions after %d commits of one block", nc, pages)
	}
	// The block is 64-464 KiB long here: a write copies it and uploads a
	// patch; a buffer of the block size would be 4 MiB a write.
	if per := (after.TotalAlloc - before.TotalAlloc) / pages; per > bs/4 {
		t.Fatalf("a %d-byte append allocates %d KiB on average; want under %d KiB", page, per>>10, bs/4>>10)
	}
	if got := readAt(t, h, len(model)+1); !bytes.Equal(got, model) {
		t.Fatalf("the file reads back otherwise (first difference at %d)", firstDiff(got, model))
	}
	r, err := s.api.GetRecipe(ctx, in.Ino, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Composed) == 0 {
		t.Fatal("the appends were not uploaded composed: the test does not exercise the cache's kept blocks")
	}
}

// TestCompCacheBoundedByPatches: the client's cache of compositions counts
// their patches, so compositions of many patches cannot fill it with
// hundreds of MB (2^17 entries of up to meta.MaxPatches patches were
// allowed).
func TestCompCacheBoundedByPatches(t *testing.T) {
	var c compCache
	patches := make([]meta.Patch, meta.MaxPatches)
	hs := testHashes(maxCompEntries)
	for _, h := range hs {
		c.add(h, meta.Composition{Len: 1, Patches: patches})
	}
	per := compCost(meta.Composition{Patches: patches})
	if n := len(c.m); n*per > maxCompEntries {
		t.Fatalf("the cache holds %d compositions of %d patches: cost %d, bound %d", n, len(patches), n*per, maxCompEntries)
	}
	if _, ok := c.get(hs[len(hs)-1]); !ok {
		t.Fatal("the composition added last is not in the cache")
	}
	for h := range c.m {
		c.drop(h)
	}
	if c.cost != 0 {
		t.Fatalf("an empty cache counts %d", c.cost)
	}
}

// TestWrittenVersionsTakeAQuarterOfTheCache: many files appended to with
// an fsync after each append (an untar or 4 writers under a policy that
// commits each write) keep at most a quarter of the memory cache alive in
// the versions the client uploaded; the rest stays for what is read, and
// a file whose version left the cache is still appended to and read back
// whole. (The versions filled the whole cache: tessera up --policy posix
// peaked at 1.1x JuiceFS's memory untarring Go's source tree.)
func TestWrittenVersionsTakeAQuarterOfTheCache(t *testing.T) {
	const bs = meta.DefaultBlockSize
	const cacheBytes = 16 << 20
	ctx := context.Background()
	s := newShared(t, bs)
	c := testClient(t, s.api, map[string]*memStore{"b0": s.store}, Config{MemCacheBytes: cacheBytes})
	rng := rand.New(rand.NewSource(29))
	const files = 60
	models := make([][]byte, files)
	inos := make([]meta.Ino, files)
	appendSync := func(i int, data []byte) {
		h := open(t, c, inos[i])
		write(t, h, int64(len(models[i])), data)
		if err := h.Fsync(ctx); err != nil {
			t.Fatalf("fsync of file %d: %v", i, err)
		}
		models[i] = append(models[i], data...)
	}
	for i := range files {
		inos[i] = s.create(t, fmt.Sprintf("f%d", i)).Ino
		appendSync(i, randBytes(rng, 64<<10))
		appendSync(i, randBytes(rng, 4<<10))
		appendSync(i, randBytes(rng, 4<<10))
	}
	c.bg.Wait()
	if held, n := c.mem.heldBytes(); held > keptBytes(cacheBytes)+int64(n)*hashSlack {
		t.Fatalf("after %d files written the memory cache keeps %d KiB alive in %d blocks; written versions may take %d KiB", files, held>>10, n, keptBytes(cacheBytes)>>10)
	}
	r, err := s.api.GetRecipe(ctx, inos[0], 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Composed) == 0 {
		t.Fatal("the appends were not uploaded composed: the test does not exercise the cache's kept blocks")
	}
	appendSync(0, randBytes(rng, 4<<10)) // its version left the cache long ago
	for _, i := range []int{0, files / 2, files - 1} {
		if got := readAt(t, open(t, c, inos[i]), len(models[i])+1); !bytes.Equal(got, models[i]) {
			t.Fatalf("file %d reads back otherwise (first difference at %d)", i, firstDiff(got, models[i]))
		}
	}
}

// TestAppendsThatFillABlockStoreItWhole: a block filled by appends with a
// commit after each (fio's writers under the posix policy: 1 MiB writes
// into 4 MiB blocks) is stored whole by the write that fills it, not as a
// composition the client would assemble from its pieces and upload again
// once it rests (compaction: the pieces and the assembled block in memory
// for every block written, a third of tessera up's heap under four fio
// writers). Appends that leave the block short still compose.
func TestAppendsThatFillABlockStoreItWhole(t *testing.T) {
	const bs = 1 << 20 // a quarter is past the inline limit of block 0
	ctx := context.Background()
	s := newShared(t, bs)
	c := testClient(t, s.api, map[string]*memStore{"b0": s.store}, Config{})
	in := s.create(t, "log")
	model := randBytes(rand.New(rand.NewSource(29)), 2*bs)
	h := open(t, c, in.Ino)
	for off := int64(0); off < int64(len(model)); off += bs / 4 {
		write(t, h, off, model[off:off+bs/4])
		flush(t, h)
		r, err := s.api.GetRecipe(ctx, in.Ino, 0, 2)
		if err != nil {
			t.Fatal(err)
		}
		end := off + bs/4
		full := end%bs == 0
		if full && len(r.Composed) != 0 {
			t.Fatalf("after the append that filled block %d: %d composed blocks in the recipe; want it stored whole", end/bs-1, len(r.Composed))
		}
		if !full && end%bs > bs/4 && len(r.Composed) != 1 {
			t.Fatalf("after an append to %d: %d composed blocks; want the short block composed", end, len(r.Composed))
		}
	}
	c.compacts.mu.Lock()
	jobs := len(c.compacts.jobs)
	c.compacts.mu.Unlock()
	if jobs != 0 {
		t.Fatalf("%d composed blocks queued for compaction after the blocks were filled; want none", jobs)
	}
	if got := readAt(t, open(t, testClient(t, s.api, map[string]*memStore{"b0": s.store}, Config{}), in.Ino), 2*bs+1); !bytes.Equal(got, model) {
		t.Fatalf("a fresh client reads the file differently at %d", firstDiff(got, model))
	}
}

// TestWriteBaseNotCached: the block a partial write starts from is copied
// into the dirty block and replaced by its next version, so it is not
// kept in the memory cache meanwhile. It was: under fsx through tessera up
// the write bases (and the pieces assembled for them) were 40 to 50 MB of
// a live heap of 100 to 130 MB, the largest share of the daemon's peak.
func TestWriteBaseNotCached(t *testing.T) {
	const bs = 64 << 10
	e := newEnv(t, bs, 0)
	ctx := context.Background()
	in := e.create(t, "f")
	data := make([]byte, 3*bs+123)
	rand.New(rand.NewSource(3)).Read(data)
	h, _, _ := e.c.Open(ctx, in, 0)
	if _, err := h.Write(ctx, 0, data); err != nil {
		t.Fatal(err)
	}
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
	// Another client, which holds nothing of the file: its writes fetch
	// their bases.
	c2, err := New(ctx, Config{
		Meta:          e.api,
		Dial:          func(meta.Server) (block.Store, error) { return e.store, nil },
		Logger:        slog.New(slog.DiscardHandler),
		MemCacheBytes: 2 * bs,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close(ctx)
	if in, err = e.api.GetAttr(ctx, in.Ino); err != nil {
		t.Fatal(err)
	}
	fresh, _, _ := c2.Open(ctx, in, 0)
	for _, off := range []int64{bs + 10, 2*bs + 500, 3 * bs} { // two partial writes, one into the short last block
		patch := bytes.Repeat([]byte{0xa5}, 100)
		if _, err := fresh.Write(ctx, off, patch); err != nil {
			t.Fatal(err)
		}
		copy(data[off:], patch)
	}
	if _, _, used := c2.mem.stats(); used != 0 {
		t.Fatalf("the memory cache holds %d bytes after partial writes; want the write bases not kept", used)
	}
	if err := fresh.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if got := e.readAll(t, in.Ino); !bytes.Equal(got, data) {
		t.Fatalf("read back %d bytes, first difference at %d", len(got), firstDiff(got, data))
	}
}

// TestWritePastBaseCopiesOnce: a write that starts a dirty block from a
// copy of the block's content and ends past it gets one buffer with room
// for it. The copy had room for a quarter more than the content only, so
// such a write allocated a second buffer at once and copied again: under
// fsx through tessera up these regrowths were a quarter of all it
// allocated (bench/results/2026-11-29-memory-6.md).
func TestWritePastBaseCopiesOnce(t *testing.T) {
	const bs = 4 << 20
	e := newEnv(t, bs, 0)
	ctx := context.Background()
	in := e.create(t, "f")
	base := make([]byte, 2<<20)
	rand.New(rand.NewSource(4)).Read(base)
	h, _, _ := e.c.Open(ctx, in, 0)
	if _, err := h.Write(ctx, 0, base); err != nil {
		t.Fatal(err)
	}
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
	// Another client, which holds nothing of the file: it fetches the
	// block (2 MiB) and copies it for the write.
	c2, err := New(ctx, Config{
		Meta:          e.api,
		Dial:          func(meta.Server) (block.Store, error) { return e.store, nil },
		Logger:        slog.New(slog.DiscardHandler),
		MemCacheBytes: 2 * bs,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close(ctx)
	if in, err = e.api.GetAttr(ctx, in.Ino); err != nil {
		t.Fatal(err)
	}
	h2, _, _ := c2.Open(ctx, in, 0)
	more := bytes.Repeat([]byte{0x5a}, bs-(100<<10)-len(base)) // ends 100 KiB short of the block: no upload yet
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, err := h2.Write(ctx, int64(len(base)), more); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	// One buffer of the block size (the test store hands out what it
	// holds, so the fetch allocates nothing); the copy and its regrowth
	// were 2.5 + 4 MiB.
	if got := after.TotalAlloc - before.TotalAlloc; got > 5<<20 {
		t.Errorf("the write allocated %.1f MiB; want at most 5 (one buffer of the block's size)", float64(got)/(1<<20))
	}
	if err := h2.Release(ctx); err != nil {
		t.Fatal(err)
	}
	want := append(base, more...)
	if got := e.readAll(t, in.Ino); !bytes.Equal(got, want) {
		t.Fatalf("read back %d bytes, first difference at %d", len(got), firstDiff(got, want))
	}
}
