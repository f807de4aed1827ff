package meta_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"tessera/internal/block"
	"tessera/internal/kv"
	"tessera/internal/kv/memkv"
	"tessera/internal/kv/pebblekv"
	"tessera/internal/meta"
	"tessera/internal/meta/metatest"
)

// testEngines open a fresh store of each engine the meta service runs on.
var testEngines = []struct {
	name string
	open func(t *testing.T) kv.Store
}{
	{"memkv", func(t *testing.T) kv.Store { return memkv.New() }},
	{"boltkv", func(t *testing.T) kv.Store { return openBolt(t, filepath.Join(t.TempDir(), "meta.db")) }},
	{"pebblekv", func(t *testing.T) kv.Store { return openPebble(t, filepath.Join(t.TempDir(), "meta")) }},
}

func openPebble(t testing.TB, dir string) *pebblekv.Store {
	store, err := pebblekv.Open(dir, pebblekv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return store
}

// pebbleService is the metatest factory over a fresh Pebble directory.
func pebbleService(t *testing.T, opts meta.Options) meta.API {
	store := openPebble(t, filepath.Join(t.TempDir(), "meta"))
	t.Cleanup(func() { store.Close() })
	s, err := meta.New(store, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestModelPebble(t *testing.T) {
	metatest.RunModel(t, pebbleService, modelSeed(t), min(*stepsFlag, 500))
}

// refsEnv is a Service with 64 KiB blocks on a fake clock, with helpers
// that fail the test.
type refsEnv struct {
	t     *testing.T
	ctx   context.Context
	s     *meta.Service
	clock *metatest.Clock
}

const refsBS = 64 << 10

func newRefsEnv(t *testing.T, store kv.Store) *refsEnv {
	t.Cleanup(func() { store.Close() })
	clock := metatest.NewClock()
	s, err := meta.New(store, meta.Options{BlockSize: refsBS, Now: clock.Now, After: clock.After})
	if err != nil {
		t.Fatal(err)
	}
	return &refsEnv{t: t, ctx: context.Background(), s: s, clock: clock}
}

func (e *refsEnv) create(name string) meta.Ino {
	e.t.Helper()
	in, err := e.s.Create(e.ctx, meta.CreateReq{Parent: meta.RootIno, Name: name, Mode: syscall.S_IFREG | 0o644})
	if err != nil {
		e.t.Fatal(err)
	}
	return in.Ino
}

// commit sets blocks of ino (index -> hash, forced) and grows the file to
// cover them.
func (e *refsEnv) commit(ino meta.Ino, blocks map[uint64]block.Hash) {
	e.t.Helper()
	req := meta.CommitReq{Ino: ino, Forced: true}
	for idx, h := range blocks {
		req.Changes = append(req.Changes, meta.BlockChange{Index: idx, New: h})
		req.Size = max(req.Size, (idx+1)*refsBS)
	}
	if _, err := e.s.Commit(e.ctx, req); err != nil {
		e.t.Fatal(err)
	}
}

// want checks the reference counts of blocks (hash -> count).
func (e *refsEnv) want(what string, counts map[block.Hash]uint64) {
	e.t.Helper()
	for h, n := range counts {
		got, err := e.s.BlockRefs(e.ctx, h)
		if err != nil || got != n {
			e.t.Errorf("%s: block %s has %d references (%v), want %d", what, h.Short(), got, err, n)
		}
	}
	if bad, err := e.s.CheckRefs(e.ctx); err != nil || len(bad) > 0 {
		e.t.Errorf("%s: stored counts differ from the recipes: %+v %v", what, bad, err)
	}
}

// releases returns every release, oldest first.
func (e *refsEnv) releases() []meta.Release {
	e.t.Helper()
	var out []meta.Release
	for after := (meta.Release{}); ; {
		rs, more, err := e.s.Releases(e.ctx, after, math.MaxInt64, 2)
		if err != nil {
			e.t.Fatal(err)
		}
		out = append(out, rs...)
		if !more {
			return out
		}
		after = rs[len(rs)-1]
	}
}

// wantReleases checks the releases made since mark (unix ns): the blocks
// in order, each with the given current count.
func (e *refsEnv) wantReleases(what string, since int64, want ...meta.Release) {
	e.t.Helper()
	var got []meta.Release
	for _, r := range e.releases() {
		if r.At >= since {
			got = append(got, r)
		}
	}
	if !slices.Equal(got, want) {
		e.t.Errorf("%s: releases %s, want %s", what, fmtReleases(got), fmtReleases(want))
	}
}

func fmtReleases(rs []meta.Release) string {
	s := "["
	for _, r := range rs {
		s += fmt.Sprintf(" %s@%d refs=%d", r.Hash.Short(), r.At, r.Refs)
	}
	return s + " ]"
}

func hashN(i int) block.Hash { return block.Sum([]byte(fmt.Sprintf("block %d", i))) }

// TestBlockRefs: every change of recipe entries changes the counts in the
// same transaction, across files (dedup) and within one, and a count that
// reaches 0 logs a release at the time of the change.
func TestBlockRefs(t *testing.T) {
	for _, eng := range testEngines {
		t.Run(eng.name, func(t *testing.T) { testBlockRefs(t, newRefsEnv(t, eng.open(t))) })
	}
}

func testBlockRefs(t *testing.T, e *refsEnv) {
	h1, h2, h3, h4, h5 := hashN(1), hashN(2), hashN(3), hashN(4), hashN(5)
	a, b := e.create("a"), e.create("b")

	e.commit(a, map[uint64]block.Hash{0: h1, 1: h2, 2: h3})
	e.commit(b, map[uint64]block.Hash{0: h1, 1: h1, 5: h2}) // dedup within and across files, holes between
	e.want("two files", map[block.Hash]uint64{h1: 3, h2: 2, h3: 1})
	e.wantReleases("two files", 0)

	// Overwrite: the old block loses one reference, the new gains one.
	t1 := e.clock.Advance(time.Second)
	e.commit(a, map[uint64]block.Hash{0: h4})
	e.want("overwrite of a shared block", map[block.Hash]uint64{h1: 2, h4: 1})
	e.commit(b, map[uint64]block.Hash{0: h5, 1: h5})
	e.want("overwrite of its last two entries", map[block.Hash]uint64{h1: 0, h5: 2})
	e.wantReleases("overwrite", t1, meta.Release{Hash: h1, At: t1})

	// A commit that writes the same hash again changes nothing.
	e.commit(a, map[uint64]block.Hash{0: h4})
	e.want("same hash again", map[block.Hash]uint64{h4: 1})

	// Truncate through SetAttr drops the entries past the new end.
	t2 := e.clock.Advance(time.Second)
	if _, err := e.s.SetAttr(e.ctx, a, meta.SetAttrReq{Valid: meta.SetSize, Size: refsBS + 1}); err != nil {
		t.Fatal(err)
	}
	e.want("truncate", map[block.Hash]uint64{h4: 1, h2: 2, h3: 0})
	e.wantReleases("truncate", t2, meta.Release{Hash: h3, At: t2})
	// Growing again leaves holes, naming nothing.
	if _, err := e.s.SetAttr(e.ctx, a, meta.SetAttrReq{Valid: meta.SetSize, Size: 10 * refsBS}); err != nil {
		t.Fatal(err)
	}
	e.want("extend", map[block.Hash]uint64{h3: 0})

	// A commit that sets a smaller size drops entries too, its own
	// changes past the end included (they never count).
	t3 := e.clock.Advance(time.Second)
	if _, err := e.s.Commit(e.ctx, meta.CommitReq{Ino: b, Forced: true, SetSize: true, Size: 2 * refsBS,
		Changes: []meta.BlockChange{{Index: 1, New: h3}, {Index: 7, New: h4}}}); err != nil {
		t.Fatal(err)
	}
	e.want("commit with a smaller size", map[block.Hash]uint64{h5: 1, h3: 1, h2: 1, h4: 1})
	e.wantReleases("commit with a smaller size", t3)

	// Block 0 becoming inline drops its hash; inline data names no block.
	c := e.create("c")
	e.commit(c, map[uint64]block.Hash{0: h1})
	t4 := e.clock.Advance(time.Second)
	if _, err := e.s.Commit(e.ctx, meta.CommitReq{Ino: c, Forced: true, SetSize: true, Size: 3,
		Changes: []meta.BlockChange{{Index: 0, InlineNew: true, NewInline: []byte("abc")}}}); err != nil {
		t.Fatal(err)
	}
	e.want("inline", map[block.Hash]uint64{h1: 0})
	e.wantReleases("inline", t4, meta.Release{Hash: h1, At: t4})

	// The release of h3 (at t2) is stale: h3 is named again.
	if rs := e.releases(); !slices.Contains(rs, meta.Release{Hash: h3, At: t2, Refs: 1}) {
		t.Errorf("releases %s: want h3's of t2 with its count 1 now", fmtReleases(rs))
	}

	// Unlink keeps an orphan's references until Reap.
	if _, err := e.s.Unlink(e.ctx, meta.RootIno, "b", 0); err != nil {
		t.Fatal(err)
	}
	e.want("orphan", map[block.Hash]uint64{h5: 1, h3: 1})
	t5 := e.clock.Advance(time.Second)
	if err := e.s.Reap(e.ctx, b); err != nil {
		t.Fatal(err)
	}
	e.want("reap", map[block.Hash]uint64{h5: 0, h3: 0})
	e.wantReleases("reap", t5, sortedReleases(t5, h3, h5)...)

	// Unlink that deletes the inode at once (the last link, not open).
	t6 := e.clock.Advance(time.Second)
	if _, err := e.s.Unlink(e.ctx, meta.RootIno, "a", a); err != nil {
		t.Fatal(err)
	}
	e.want("unlink and reap", map[block.Hash]uint64{h4: 0, h2: 0})
	e.wantReleases("unlink and reap", t6, sortedReleases(t6, h2, h4)...)

	// Dropping a release removes it from the log.
	if err := e.s.DropReleases(e.ctx, e.releases()); err != nil {
		t.Fatal(err)
	}
	if rs := e.releases(); len(rs) != 0 {
		t.Errorf("releases after dropping them all: %s", fmtReleases(rs))
	}
}

// sortedReleases returns releases of hs at `at`, in key order (by hash).
func sortedReleases(at int64, hs ...block.Hash) []meta.Release {
	slices.SortFunc(hs, func(a, b block.Hash) int { return slices.Compare(a[:], b[:]) })
	var out []meta.Release
	for _, h := range hs {
		out = append(out, meta.Release{Hash: h, At: at})
	}
	return out
}

// TestReleasesBefore: Releases lists only releases made before its bound,
// oldest first, a page at a time.
func TestReleasesBefore(t *testing.T) {
	e := newRefsEnv(t, memkv.New())
	f := e.create("f")
	var ats []int64
	for i := range 5 {
		e.commit(f, map[uint64]block.Hash{0: hashN(100 + i)})
		ats = append(ats, e.clock.Advance(time.Second))
	}
	// Block 100+i was released at ats[i] (by the next commit).
	rs, more, err := e.s.Releases(e.ctx, meta.Release{}, ats[2]+1, 10)
	if err != nil || more || len(rs) != 3 || rs[0].Hash != hashN(100) || rs[2].Hash != hashN(102) || rs[2].At != ats[2] {
		t.Fatalf("releases before %d: %s more=%v %v; want those of blocks 100 to 102", ats[2]+1, fmtReleases(rs), more, err)
	}
	rs, more, err = e.s.Releases(e.ctx, rs[0], math.MaxInt64, 2)
	if err != nil || !more || len(rs) != 2 || rs[0].Hash != hashN(101) || rs[1].Hash != hashN(102) {
		t.Fatalf("releases after the first, 2 at most: %s more=%v %v", fmtReleases(rs), more, err)
	}
}

// TestRefsUpgrade: a store of key-schema version 1 (no counts) gets its
// counts built from its recipes when a Service opens it; a version this
// build does not know is refused.
func TestRefsUpgrade(t *testing.T) {
	ctx := context.Background()
	for _, eng := range testEngines {
		t.Run(eng.name, func(t *testing.T) {
			store := eng.open(t)
			e := newRefsEnv(t, store)
			a, b := e.create("a"), e.create("b")
			e.commit(a, map[uint64]block.Hash{0: hashN(1), 1: hashN(2), 2000: hashN(1)})
			e.commit(b, map[uint64]block.Hash{0: hashN(1), 3: hashN(3)})
			if _, err := e.s.Unlink(ctx, meta.RootIno, "b", 0); err != nil { // an orphan's count too
				t.Fatal(err)
			}
			e.commit(a, map[uint64]block.Hash{1: hashN(4)}) // hashN(2) released
			// Make it a version-1 store: no counts, no releases.
			err := store.Update(ctx, func(tx kv.Txn) error {
				for _, p := range []string{"h", "u"} {
					var keys [][]byte
					err := tx.Scan([]byte(p), kv.PrefixEnd([]byte(p)), func(k, _ []byte) (bool, error) {
						keys = append(keys, slices.Clone(k))
						return true, nil
					})
					if err != nil {
						return err
					}
					if len(keys) == 0 {
						return fmt.Errorf("no %q keys to delete", p)
					}
					for _, k := range keys {
						if err := tx.Delete(k); err != nil {
							return err
						}
					}
				}
				return tx.Put([]byte("mformat"), []byte{0, 0, 0, 0, 0, 0, 0, 1})
			})
			if err != nil {
				t.Fatal(err)
			}
			if bad, _ := e.s.CheckRefs(ctx); len(bad) == 0 {
				t.Fatal("deleting the counts left nothing to rebuild")
			}

			s2, err := meta.New(store, meta.Options{})
			if err != nil {
				t.Fatalf("open a version-1 store: %v", err)
			}
			if bad, err := s2.CheckRefs(ctx); err != nil || len(bad) > 0 {
				t.Fatalf("counts after the upgrade differ from the recipes: %+v %v", bad, err)
			}
			for h, n := range map[block.Hash]uint64{hashN(1): 3, hashN(2): 0, hashN(3): 1, hashN(4): 1} {
				if got, err := s2.BlockRefs(ctx, h); err != nil || got != n {
					t.Errorf("after the upgrade: block %s has %d references (%v), want %d", h.Short(), got, err, n)
				}
			}
			// Opening again does not count twice.
			s3, err := meta.New(store, meta.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if got, err := s3.BlockRefs(ctx, hashN(1)); err != nil || got != 3 {
				t.Errorf("after a second open: %d references of block 1 (%v), want 3", got, err)
			}
			// And the counts go on from there.
			e2 := &refsEnv{t: t, ctx: ctx, s: s3, clock: e.clock}
			e2.commit(a, map[uint64]block.Hash{0: hashN(5)})
			e2.want("a commit after the upgrade", map[block.Hash]uint64{hashN(1): 2, hashN(5): 1})

			err = store.Update(ctx, func(tx kv.Txn) error {
				return tx.Put([]byte("mformat"), []byte{0, 0, 0, 0, 0, 0, 0, 9})
			})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := meta.New(store, meta.Options{}); !errors.Is(err, meta.ErrInvalid) {
				t.Fatalf("open a version-9 store: %v, want ErrInvalid", err)
			}
		})
	}
}

// TestRefsUnderflowIsCorrupt: dropping an entry whose block has no count
// (counts that disagree with the recipes) fails the change as corruption
// rather than going on with counts that could let a named block be removed.
func TestRefsUnderflowIsCorrupt(t *testing.T) {
	ctx := context.Background()
	store := memkv.New()
	e := newRefsEnv(t, store)
	f := e.create("f")
	e.commit(f, map[uint64]block.Hash{0: hashN(1)})
	h := hashN(1)
	if err := store.Update(ctx, func(tx kv.Txn) error { return tx.Delete(append([]byte("h"), h[:]...)) }); err != nil {
		t.Fatal(err)
	}
	_, err := e.s.Commit(ctx, meta.CommitReq{Ino: f, Forced: true, Changes: []meta.BlockChange{{Index: 0, New: hashN(2)}}})
	if !errors.Is(err, meta.ErrCorrupt) {
		t.Fatalf("commit over an uncounted block: %v, want ErrCorrupt", err)
	}
}

// TestDropReleasesBefore: every release before the bound goes, across
// pages; later ones stay.
func TestDropReleasesBefore(t *testing.T) {
	e := newRefsEnv(t, memkv.New())
	f := e.create("f")
	n := meta.ReleasePage + 300
	for i := range n {
		e.commit(f, map[uint64]block.Hash{0: hashN(1000 + i)})
	}
	bound := e.clock.Advance(time.Second)
	e.commit(f, map[uint64]block.Hash{0: hashN(5)})
	e.commit(f, map[uint64]block.Hash{0: hashN(6)}) // releases hashN(5) at bound
	got, err := e.s.DropReleasesBefore(e.ctx, bound)
	if err != nil || got != n-1 {
		t.Fatalf("DropReleasesBefore: %d, %v; want the %d releases made before the bound", got, err, n-1)
	}
	if rs := e.releases(); len(rs) != 2 || rs[0].At != bound || rs[1].At != bound {
		t.Fatalf("releases left: %s; want the two made at the bound", fmtReleases(rs))
	}
}
