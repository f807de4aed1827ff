package client

import (
	"context"
	"math"
	"math/rand"
	"testing"

	"tessera/internal/block"
	"tessera/internal/meta"
)

// TestSupersededUploadsReleased: a partly written block uploaded to make
// room, then replaced by the whole block before any commit, is released by
// that commit (so the reclaimer removes it), while the committed block is
// not.
func TestSupersededUploadsReleased(t *testing.T) {
	const bs = 64 << 10
	ctx := context.Background()
	s := newShared(t, bs)
	c := s.client(t, nil, nil, nil)
	in := s.create(t, "f")
	h := open(t, c, in.Ino)
	data := randBytes(rand.New(rand.NewSource(13)), bs)
	write(t, h, 0, data[:bs/2])
	c.makeRoom() // the half block goes up, as under memory pressure
	waitFor(t, func() bool {
		h.f.mu.Lock()
		defer h.f.mu.Unlock()
		return len(h.f.pending) == 1 && h.f.nInflight == 0
	})
	partial := block.Sum(data[:bs/2])
	write(t, h, bs/2, data[bs/2:])
	flush(t, h)
	rels, _, err := s.api.Releases(ctx, meta.Release{}, math.MaxInt64, 0)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range rels {
		if r.Hash == block.Sum(data) {
			t.Fatalf("the committed block was released: %+v", r)
		}
		found = found || (r.Hash == partial && r.Refs == 0)
	}
	if !found {
		t.Fatalf("releases %+v lack the superseded half block %s", rels, partial.Short())
	}
}
