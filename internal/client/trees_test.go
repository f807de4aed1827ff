package client

import (
	"bytes"
	"context"
	"log/slog"
	"math/rand"
	"strings"
	"testing"

	"tessera/internal/block"
)

// TestComposedNamedFromTree: a log under small committed appends, reset to
// its start now and then and written over (SQLite's WAL after a
// checkpoint), and a page rewritten in place between commits: every
// composed version is named by hashing what changed (the groups the
// commit's ranges touch), not the whole block, and every name is the
// BLAKE3 of the block's content: a fresh client reads the file through the
// compositions (assembling them checks each name against the content),
// and each committed block's name is the hash of the model's bytes.
func TestComposedNamedFromTree(t *testing.T) {
	const bs = 1 << 20
	ctx := context.Background()
	s := newShared(t, bs)
	c := s.client(t, nil, nil, nil)
	in := s.create(t, "wal")
	rng := rand.New(rand.NewSource(28))
	h := open(t, c, in.Ino)
	model := randBytes(rng, 96<<10) // a header and the first frames: stored whole
	write(t, h, 0, model)
	flush(t, h)
	off := int64(len(model))
	before := c.Stats()
	const commits = 120
	for i := range commits {
		if i%40 == 39 {
			off = 32 // reset: the next frames overwrite the old ones
		}
		frame := randBytes(rng, 4096+24)
		write(t, h, off, frame)
		model = apply(model, off, frame)
		off += int64(len(frame))
		if i%3 == 0 { // a page of the database rewritten in place
			page := randBytes(rng, 4096)
			at := int64(rng.Intn(len(model) - len(page)))
			write(t, h, at, page)
			model = apply(model, at, page)
		}
		flush(t, h)
	}
	st := c.Stats()
	named, hashed := st.ComposedNamed-before.ComposedNamed, st.ComposedHashed-before.ComposedHashed
	whole := st.ComposedHashedWhole - before.ComposedHashedWhole
	t.Logf("%d commits: %d composed versions named, %d bytes hashed for them (%d per version), %d hashed whole",
		commits, named, hashed, hashed/max(named, 1), whole)
	// Only the first: its predecessor was stored whole before the block
	// was under small writes. The block uploaded whole when its patches
	// reached meta.MaxPatches kept its tree.
	if whole != 1 {
		t.Fatalf("%d composed versions were hashed whole, want 1", whole)
	}
	if named < commits/2 {
		t.Fatalf("%d of %d commits were composed: the test does not test composed names", named, commits)
	}
	// A commit's ranges touch at most 4 groups of 16 KiB; a version whose
	// predecessor's tree is missing is hashed whole (96 KiB to 1 MiB
	// here), which a few may be (after a whole upload).
	if limit := named*64<<10 + 4*bs; hashed > limit {
		t.Fatalf("%d composed versions hashed %d bytes, more than %d: they are hashed whole, not from their trees", named, hashed, limit)
	}
	r, err := s.api.GetRecipe(ctx, in.Ino, 0, 4)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Blocks) != 1 || r.Blocks[0] != block.Sum(model) {
		t.Fatalf("the committed block's name is not the BLAKE3 of its content (%d blocks)", len(r.Blocks))
	}
	h.Release(ctx)
	fresh := s.client(t, nil, nil, nil)
	if got := readAt(t, open(t, fresh, in.Ino), len(model)+1); !bytes.Equal(got, model) {
		t.Fatalf("a fresh client reads something else (first difference at %d of %d)", firstDiff(got, model), len(got))
	}
}

// TestTreeNamesVerified: every verifyEvery-th version named from a tree is
// also hashed whole; ranges that missed a change are caught there, logged,
// and the version named by its whole content.
func TestTreeNamesVerified(t *testing.T) {
	s := newShared(t, 1<<20)
	var logged bytes.Buffer
	c := s.client(t, nil, nil, slog.New(slog.NewTextHandler(&logged, nil)))
	data := randBytes(rand.New(rand.NewSource(5)), 200<<10)
	old := c.sumTree(data)
	for i := 1; i <= verifyEvery; i++ {
		next := bytes.Clone(data)
		next[1000] ^= byte(i)    // told
		next[150<<10] ^= byte(i) // not told: in a group the run does not touch
		h := c.sumChanged(next, old, [][2]int64{{1000, 1001}})
		if i < verifyEvery && h == block.Sum(next) {
			t.Fatalf("version %d: named by its whole content before the verifying turn; the test does not test the check", i)
		}
		if i == verifyEvery {
			if h != block.Sum(next) {
				t.Fatalf("the verifying turn kept the tree's name %s, want the whole content's %s", h.Short(), block.Sum(next).Short())
			}
			if !strings.Contains(logged.String(), "missed a change") {
				t.Fatalf("the difference was not logged: %q", logged.String())
			}
		}
	}
}
