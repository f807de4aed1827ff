package client

import (
	"bytes"
	"context"
	"math/rand"
	"runtime"
	"testing"

	"tessera/internal/block"
	"tessera/internal/meta"
)

// TestCommittedAppendsWriteInPlace: appends with a commit after each (fio's
// 1 MiB writes reach the client as 128 KiB ones; the posix policy commits
// each) write on the buffer of the version before them: filling a 4 MiB
// block allocates about the block, not a copy of it per append. (Each
// append copied the block: 32 copies of 2 MiB on average per block, 15 GB
// of garbage for fio's 2 GB under tessera up --policy posix.)
func TestCommittedAppendsWriteInPlace(t *testing.T) {
	const bs = meta.DefaultBlockSize
	const piece = 128 << 10
	s := newShared(t, bs)
	c := testClient(t, s.api, map[string]*memStore{"b0": s.store}, Config{})
	in := s.create(t, "log")
	model := randBytes(rand.New(rand.NewSource(31)), 2*bs)
	h := open(t, c, in.Ino)
	// Block 0 first: the test measures block 1, whose first write gets a
	// whole block's buffer (a file past its first block is a big file).
	write(t, h, 0, model[:bs])
	flush(t, h)
	c.bg.Wait()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for off := int64(bs); off < 2*bs; off += piece {
		write(t, h, off, model[off:off+piece])
		flush(t, h)
	}
	c.bg.Wait()
	runtime.ReadMemStats(&after)
	// The block's buffer, the memStore's copies of what was uploaded
	// (patches and the whole block: about 2 blocks) and small change.
	if got, limit := after.TotalAlloc-before.TotalAlloc, uint64(5*bs); got > limit {
		t.Fatalf("32 committed appends filling a %d MiB block allocated %d MiB; want at most %d MiB (no copy of the block per append)", bs>>20, got>>20, limit>>20)
	}
	if got := readAt(t, open(t, testClient(t, s.api, map[string]*memStore{"b0": s.store}, Config{}), in.Ino), 2*bs+1); !bytes.Equal(got, model) {
		t.Fatalf("a fresh client reads the file differently at %d", firstDiff(got, model))
	}
}

// TestAppendsInPlaceLeaveVersionsAlone: seeded appends (some past a hole),
// overwrites,
// truncates (below and above what earlier versions held, then appends
// across the cut) and commits after one to a few of them, on one block: every version's bytes that a
// reader took from the client (the memory cache's kept versions, shared
// with the buffers appends write on) still hash to that version after all
// the later writes, and the file reads back as the model.
func TestAppendsInPlaceLeaveVersionsAlone(t *testing.T) {
	const bs = 1 << 20
	ctx := context.Background()
	for seed := int64(1); seed <= 8; seed++ {
		rng := rand.New(rand.NewSource(seed))
		s := newShared(t, bs)
		c := testClient(t, s.api, map[string]*memStore{"b0": s.store}, Config{})
		in := s.create(t, "f")
		h := open(t, c, in.Ino)
		var model []byte
		type held struct {
			h    block.Hash
			data []byte
		}
		var versions []held
		inPlace := 0
		for i := 0; i < 200; i++ {
			switch op := rng.Intn(10); {
			case op < 6 || len(model) == 0: // append, after a hole at times
				hole := 0
				if op == 5 {
					hole = rng.Intn(16 << 10)
				}
				data := randBytes(rng, 1+rng.Intn(24<<10))
				if len(model)+hole+len(data) > bs {
					continue
				}
				write(t, h, int64(len(model)+hole), data)
				model = append(append(model, make([]byte, hole)...), data...)
			case op < 8: // overwrite
				off := rng.Intn(len(model))
				data := randBytes(rng, 1+rng.Intn(min(8<<10, len(model)-off)))
				write(t, h, int64(off), data)
				copy(model[off:], data)
			default: // truncate, then maybe an append past the cut
				size := rng.Intn(len(model) + 1)
				cur, err := s.api.GetAttr(ctx, in.Ino)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := c.Truncate(ctx, cur, int64(size)); err != nil {
					t.Fatalf("seed %d op %d: truncate %d: %v", seed, i, size, err)
				}
				model = model[:size]
			}
			f := h.f
			f.mu.Lock()
			if d := f.dirty[0]; d != nil && d.shared > 0 {
				inPlace++ // the write went on a version's buffer
			}
			f.mu.Unlock()
			if rng.Intn(3) > 0 {
				continue // more writes into the same dirty block
			}
			flush(t, h)
			c.bg.Wait()
			r, err := s.api.GetRecipe(ctx, in.Ino, 0, 1)
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Blocks) == 0 || r.Blocks[0].IsZero() {
				continue
			}
			vh := r.Blocks[0]
			if _, ok := r.Composed[vh]; ok {
				c.comps.add(vh, r.Composed[vh])
			}
			data, err := c.getBlock(ctx, vh, true)
			if err != nil {
				t.Fatalf("seed %d op %d: the committed version: %v", seed, i, err)
			}
			versions = append(versions, held{vh, data})
		}
		flush(t, h)
		for i, v := range versions {
			if block.Sum(v.data) != v.h {
				t.Fatalf("seed %d: version %d of %d (%d bytes) changed after later writes", seed, i, len(versions), len(v.data))
			}
		}
		if inPlace == 0 {
			t.Fatalf("seed %d: no write went on a version's buffer: the test tested nothing", seed)
		}
		if got := readAt(t, open(t, testClient(t, s.api, map[string]*memStore{"b0": s.store}, Config{}), in.Ino), bs+1); !bytes.Equal(got, model) {
			t.Fatalf("seed %d: a fresh client reads %d bytes, want %d (first difference at %d)", seed, len(got), len(model), firstDiff(got, model))
		}
	}
}
