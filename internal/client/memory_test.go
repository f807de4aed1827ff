package client

import (
	"encoding/binary"
	"math/rand"
	"testing"
	"time"

	"tessera/internal/block"
)

func TestShareOfMemory(t *testing.T) {
	for _, c := range []struct{ total, want int64 }{
		{0, 256 << 20},        // unknown: the cap
		{1 << 30, 32 << 20},   // 1 GiB: the floor
		{4 << 30, 64 << 20},   // a laptop
		{24 << 30, 256 << 20}, // capped
	} {
		if got := shareOfMemory(c.total, 64, 32<<20, 256<<20); got != c.want {
			t.Errorf("shareOfMemory(%d MiB) = %d MiB; want %d MiB", c.total>>20, got>>20, c.want>>20)
		}
	}
	if DefaultMemCacheBytes() <= 0 || DefaultDirtyBytes() <= 0 {
		t.Fatal("defaults from this machine's memory are not positive")
	}
}

// TestIdleClientReleasesMemory: a client with no reads or writes for
// IdleRelease drops its cached blocks and spare write buffers (once per
// idle period), and caches again when used.
func TestIdleClientReleasesMemory(t *testing.T) {
	const bs = 64 << 10
	s := newShared(t, bs)
	c := testClient(t, s.api, map[string]*memStore{"b0": s.store}, Config{IdleRelease: 20 * time.Millisecond})
	in := s.create(t, "f")
	h := open(t, s.client(t, nil, nil, nil), in.Ino)
	write(t, h, 0, randBytes(rand.New(rand.NewSource(3)), 4*bs))
	flush(t, h)

	r := open(t, c, in.Ino)
	readAt(t, r, 4*bs)
	// A read-ahead still under way when the client went idle may fill the
	// cache after the first release; the next one takes it.
	waitFor(t, func() bool { st := c.Stats(); return st.IdleReleases >= 1 && st.MemBytes == 0 })
	if st := c.Stats(); st.MemBytes != 0 {
		t.Fatalf("%d bytes of blocks cached after the client went idle; want 0", st.MemBytes)
	}
	// Used again, it caches again, and gives it back again.
	n := c.Stats().IdleReleases
	readAt(t, open(t, c, in.Ino), 4*bs)
	waitFor(t, func() bool { st := c.Stats(); return st.IdleReleases > n && st.MemBytes == 0 })
	if st := c.Stats(); st.MemBytes != 0 {
		t.Fatalf("%d bytes of blocks cached after the second idle period; want 0", st.MemBytes)
	}
}

// TestMemoryBoundSumsItsParts: the stated bound follows the flags (the
// cache and the dirty budget, the parts sized from them) and counts the
// fetches under way.
func TestMemoryBoundSumsItsParts(t *testing.T) {
	small := MemoryBound(Config{MemCacheBytes: 32 << 20, DirtyBytes: 16 << 20, Fetches: 8})
	large := MemoryBound(Config{MemCacheBytes: 64 << 20, DirtyBytes: 32 << 20, Fetches: 8})
	if d := large - small; d < (32<<20)+(16<<20) {
		t.Fatalf("doubling the cache and the dirty budget raised the bound by %d MiB; want at least 48", d>>20)
	}
	var sum int64
	for _, p := range MemoryParts(Config{MemCacheBytes: 32 << 20, DirtyBytes: 16 << 20, Fetches: 8}) {
		if p.Bytes <= 0 {
			t.Errorf("part %q is bounded by %d bytes", p.Name, p.Bytes)
		}
		sum += p.Bytes
	}
	if sum != small || small < (32<<20)+(16<<20)+8*(4<<20) {
		t.Fatalf("bound %d MiB, parts %d MiB", small>>20, sum>>20)
	}
}

// TestIdleClientShrinksSegSums: an idle client keeps at most 1/16 of its
// segment sums' bound, the most recently used; they stayed whole (16 MiB
// in tessera up) until the bound pushed them out, the largest part of an
// idle daemon's heap after fsx.
func TestIdleClientShrinksSegSums(t *testing.T) {
	s := newShared(t, 64<<10)
	c := testClient(t, s.api, map[string]*memStore{"b0": s.store}, Config{IdleRelease: 20 * time.Millisecond})
	var last block.Hash
	for i := range 1024 { // the sums of 1,024 blocks of 4 MiB: a quarter of the bound
		binary.LittleEndian.PutUint64(last[:], uint64(i)+1)
		fakeSums(c.sums, last, 1024)
	}
	// Used since (a release may have come while the table filled): the
	// next idle period's release is after the fill.
	c.active.touch(time.Now())
	n := c.Stats().IdleReleases
	waitFor(t, func() bool { return c.Stats().IdleReleases > n })
	if used := c.sums.usedBytes(); used > DefaultSegSumsBytes/idleSumsShare {
		t.Fatalf("an idle client keeps %d bytes of segment sums; want at most %d", used, DefaultSegSumsBytes/idleSumsShare)
	}
	if _, ok := c.sums.get(last); !ok {
		t.Error("the most recently learned sums went")
	}
}

// fakeSums records n made-up segment sums for h, as learn would for a
// block of n segments (without hashing one).
func fakeSums(s *segSums, h block.Hash, n int) {
	e := &sumEntry{size: int64(n) * segSize, sums: make([]uint32, n)}
	e.used.Store(s.clock.Add(1))
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mu.items[h] = e
	s.mu.used += e.cost()
}
