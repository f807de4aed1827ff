package client

import (
	"math/rand"
	"testing"
	"time"
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
	waitFor(t, func() bool { return c.Stats().IdleReleases >= 1 })
	if st := c.Stats(); st.MemBytes != 0 {
		t.Fatalf("%d bytes of blocks cached after the client went idle; want 0", st.MemBytes)
	}
	// Used again, it caches again, and gives it back again.
	n := c.Stats().IdleReleases
	readAt(t, open(t, c, in.Ino), 4*bs)
	waitFor(t, func() bool { return c.Stats().IdleReleases > n })
	if st := c.Stats(); st.MemBytes != 0 {
		t.Fatalf("%d bytes of blocks cached after the second idle period; want 0", st.MemBytes)
	}
}
