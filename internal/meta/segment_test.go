package meta

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"

	"tessera/internal/block"
	"tessera/internal/kv"
	"tessera/internal/kv/memkv"
)

// Segmented drops (segment.go) on a store that refuses, as etcd does, any
// transaction of more than a bound of compares or writes: with the bound
// at 64, files of a few hundred blocks need many transactions to reap or
// cut, and a commit that needs more is refused up front.

// errBound is boundStore's refusal.
var errBound = errors.New("boundStore: transaction over the bound")

// boundStore is a kv.Store whose Update fails, writing nothing, when its
// transaction read more than limit keys and ranges or wrote more than
// limit keys: etcd's --max-txn-ops, counted as etcdkv counts it.
type boundStore struct {
	kv.Store
	limit int
	bytes int // and more bytes than this written (0: any)
}

func (b boundStore) Update(ctx context.Context, fn func(kv.Txn) error) error {
	return b.Store.Update(ctx, func(tx kv.Txn) error {
		c := newOpCount()
		if err := fn(countTxn{Txn: tx, c: c}); err != nil {
			return err
		}
		if c.cost() > b.limit || (b.bytes > 0 && c.bytes > b.bytes) {
			return fmt.Errorf("%d reads and ranges, %d writes of %d bytes: %w", len(c.reads)+c.scans, len(c.writes), c.bytes, errBound)
		}
		return nil
	})
}

const segBound = 64

// segEnv is a Service over a memkv bounded at segBound, with 4 KiB blocks
// and no restart grace; restart returns another over the same store.
type segEnv struct {
	t     *testing.T
	ctx   context.Context
	inner kv.Store
	// limit is the Services' MaxTxnOps, storeLimit boundStore's.
	limit, storeLimit int
	svc               *Service
}

// newSegEnv is a segEnv whose store refuses what the Service's bound
// would: inner, bounded at limit.
func newSegEnv(t *testing.T, inner kv.Store, limit int) *segEnv {
	t.Helper()
	return newSegEnvOver(t, inner, limit, limit)
}

// newSegEnvOver is a segEnv over inner bounded at storeLimit (which a
// store bounding its transactions itself, etcdkv, may leave unbounded).
func newSegEnvOver(t *testing.T, inner kv.Store, limit, storeLimit int) *segEnv {
	t.Helper()
	e := &segEnv{t: t, ctx: context.Background(), inner: inner, limit: limit, storeLimit: storeLimit}
	e.restart()
	return e
}

// restart replaces the Service by a new one over the same store, as a
// restarted meta process.
func (e *segEnv) restart() {
	e.t.Helper()
	svc, err := New(boundStore{Store: e.inner, limit: e.storeLimit}, Options{BlockSize: 4096, MaxTxnOps: e.limit, OrphanGrace: -1})
	if err != nil {
		e.t.Fatal(err)
	}
	e.svc = svc
}

// fill creates name with n blocks named tag+index, committed a few at a
// time, and returns it.
func (e *segEnv) fill(name, tag string, n int) Inode {
	e.t.Helper()
	return e.fillReq(CreateReq{Parent: RootIno, Name: name, Mode: 0o100644}, tag, n)
}

func (e *segEnv) fillReq(req CreateReq, tag string, n int) Inode {
	e.t.Helper()
	in, err := e.svc.Create(e.ctx, req)
	if err != nil {
		e.t.Fatal(err)
	}
	const per = 8
	for i := 0; i < n; i += per {
		var cs []BlockChange
		for j := i; j < min(i+per, n); j++ {
			cs = append(cs, BlockChange{Index: uint64(j), New: hashOf(fmt.Sprint(tag, j))})
		}
		if in, err = e.svc.Commit(e.ctx, CommitReq{Ino: in.Ino, Changes: cs, Size: uint64(min(i+per, n)) * 4096}); err != nil {
			e.t.Fatalf("commit blocks %d..: %v", i, err)
		}
	}
	return in
}

// clean checks that every reference count equals the recipe entries
// naming its block and that no drop is pending.
func (e *segEnv) clean() {
	e.t.Helper()
	bad, err := e.svc.CheckRefs(e.ctx)
	if err != nil || len(bad) != 0 {
		e.t.Fatalf("reference counts: %v %+v", err, bad)
	}
	if n := e.pendingDrops(); n != 0 {
		e.t.Fatalf("%d drops still pending", n)
	}
}

func (e *segEnv) pendingDrops() int {
	n := 0
	err := e.svc.view(e.ctx, func(t txn) error {
		n = 0
		p := []byte{pfxPending}
		return t.Scan(p, kv.PrefixEnd(p), func(_, _ []byte) (bool, error) { n++; return true, nil })
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return n
}

// released returns the blocks with a release and a count of 0.
func (e *segEnv) released() map[block.Hash]bool {
	e.t.Helper()
	rs, _, err := e.svc.Releases(e.ctx, Release{}, math.MaxInt64, 1<<20)
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[block.Hash]bool{}
	for _, r := range rs {
		if r.Refs == 0 {
			out[r.Hash] = true
		}
	}
	return out
}

// wantReleased checks that blocks tag+[from,to) are all released.
func (e *segEnv) wantReleased(tag string, from, to int) {
	e.t.Helper()
	rel := e.released()
	for i := from; i < to; i++ {
		if !rel[hashOf(fmt.Sprint(tag, i))] {
			e.t.Fatalf("block %s%d not released", tag, i)
		}
	}
}

// wantRecipe checks that ino's recipe is tag+[0,n) followed by holes up
// to its size.
func (e *segEnv) wantRecipe(ino Ino, tag string, n int, size uint64) {
	e.t.Helper()
	r, err := e.svc.GetRecipe(e.ctx, ino, 0, math.MaxUint64)
	if err != nil {
		e.t.Fatal(err)
	}
	if r.Size != size || uint64(len(r.Blocks)) != ceilDiv(size, 4096) {
		e.t.Fatalf("recipe of %d: size %d, %d blocks; want %d", ino, r.Size, len(r.Blocks), size)
	}
	for i, h := range r.Blocks {
		want := block.Hash{}
		if i < n {
			want = hashOf(fmt.Sprint(tag, i))
		}
		if h != want {
			e.t.Fatalf("recipe of %d: block %d is %s, want %s", ino, i, h.Short(), want.Short())
		}
	}
}

// TestSegmentedReap: unlinking a file of 300 blocks with reap (about 600
// writes) deletes it in transactions within the bound; a linked file
// sharing some of its blocks keeps them. Before segmenting, the one
// transaction of the delete was refused (errBound, as etcd's ErrTooLarge).
func TestSegmentedReap(t *testing.T) { reapCase(newSegEnv(t, memkv.New(), segBound)) }

func reapCase(e *segEnv) {
	t := e.t
	keep := e.fill("keep", "k", 20)
	f := e.fill("big", "b", 300)
	// Blocks 0..9 of big are also keep's blocks 10..19 (shared).
	var cs []BlockChange
	for i := range 10 {
		cs = append(cs, BlockChange{Index: uint64(i), Old: hashOf(fmt.Sprint("b", i)), New: hashOf(fmt.Sprint("k", 10+i))})
	}
	if _, err := e.svc.Commit(e.ctx, CommitReq{Ino: f.Ino, Changes: cs}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Unlink(e.ctx, RootIno, "big", f.Ino); err != nil {
		t.Fatalf("unlink with reap: %v", err)
	}
	if _, err := e.svc.GetAttr(e.ctx, f.Ino); !errors.Is(err, ErrNotFound) {
		t.Fatalf("reaped inode: %v; want ErrNotFound", err)
	}
	e.clean()
	e.wantReleased("b", 0, 300)
	rel := e.released()
	for i := range 20 {
		if rel[hashOf(fmt.Sprint("k", i))] {
			t.Fatalf("block k%d of the linked file released", i)
		}
	}
	e.wantRecipe(keep.Ino, "k", 20, 20*4096)
	if inos, _, err := e.svc.Orphans(e.ctx, 0, 10); err != nil || len(inos) != 0 {
		t.Fatalf("orphans left: %v %v", inos, err)
	}
}

// TestSegmentedReapCrash: a reap stopped between segments (a crash)
// leaves an orphan whose remaining entries are counted, which nobody can
// open any more; the reaper of a restarted service finishes it.
func TestSegmentedReapCrash(t *testing.T) { reapCrashCase(newSegEnv(t, memkv.New(), segBound)) }

func reapCrashCase(e *segEnv) {
	t := e.t
	keep := e.fill("keep", "k", 30)
	f := e.fill("big", "b", 300)
	crash := errors.New("crash")
	segs := 0
	e.svc.segmentFault = func(op string, ino Ino) error {
		if segs++; segs == 2 {
			return crash
		}
		return nil
	}
	if _, err := e.svc.Unlink(e.ctx, RootIno, "big", 0); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.Reap(e.ctx, f.Ino); !errors.Is(err, crash) {
		t.Fatalf("reap: %v; want the injected crash", err)
	}
	if bad, err := e.svc.CheckRefs(e.ctx); err != nil || len(bad) != 0 {
		t.Fatalf("counts between segments: %v %+v", err, bad)
	}
	if n := e.pendingDrops(); n != 1 {
		t.Fatalf("%d pending drops after the crash, want 1", n)
	}
	e.restart()
	if _, err := e.svc.HoldOpen(e.ctx, f.Ino); !errors.Is(err, ErrNotFound) {
		t.Fatalf("open of a half-reaped orphan: %v; want ErrNotFound", err)
	}
	n, err := e.svc.ReapOrphans(e.ctx)
	if err != nil || n != 1 {
		t.Fatalf("reaper after the restart: %d, %v; want 1 reaped", n, err)
	}
	e.clean()
	e.wantReleased("b", 0, 300)
	e.wantRecipe(keep.Ino, "k", 30, 30*4096)
}

// TestHalfReapedTmpfile: an O_TMPFILE orphan (which Link may name) whose
// reap stopped between segments cannot be named any more: its recipe is
// partly gone. The reaper finishes it.
func TestHalfReapedTmpfile(t *testing.T) {
	e := newSegEnv(t, memkv.New(), segBound)
	f := e.fillReq(CreateReq{Parent: RootIno, Mode: 0o100644, Tmpfile: true}, "t", 200)
	crash := errors.New("crash")
	e.svc.segmentFault = func(string, Ino) error { return crash }
	if err := e.svc.Reap(e.ctx, f.Ino); !errors.Is(err, crash) {
		t.Fatalf("reap: %v; want the injected crash", err)
	}
	e.restart()
	if _, err := e.svc.Link(e.ctx, f.Ino, RootIno, "named"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("link of a half-reaped tmpfile: %v; want ErrNotFound", err)
	}
	if n, err := e.svc.ReapOrphans(e.ctx); err != nil || n != 1 {
		t.Fatalf("reaper: %d, %v; want 1 reaped", n, err)
	}
	e.clean()
	e.wantReleased("t", 0, 200)
}

// TestSegmentedTruncate: cutting a file of 300 blocks to 5, by SetAttr and
// by a Commit with SetSize, changes the size at once and drops the rest
// in segments; a cut stopped between segments hides the rest (past the
// end), the next write to the file drops it before growing it (no stale
// block resurfaces in the hole), and the reaper finishes a cut left alone.
func TestSegmentedTruncate(t *testing.T) { truncateCase(newSegEnv(t, memkv.New(), segBound)) }

func truncateCase(e *segEnv) {
	t := e.t
	a := e.fill("a", "a", 300)
	if _, err := e.svc.SetAttr(e.ctx, a.Ino, SetAttrReq{Valid: SetSize, Size: 5 * 4096}); err != nil {
		t.Fatalf("truncate by SetAttr: %v", err)
	}
	e.wantRecipe(a.Ino, "a", 5, 5*4096)
	e.clean()
	e.wantReleased("a", 5, 300)

	b := e.fill("b", "b", 300)
	if _, err := e.svc.Commit(e.ctx, CommitReq{Ino: b.Ino, SetSize: true, Size: 5 * 4096}); err != nil {
		t.Fatalf("truncate by Commit: %v", err)
	}
	e.wantRecipe(b.Ino, "b", 5, 5*4096)
	e.clean()
	e.wantReleased("b", 5, 300)

	// Crashes between segments.
	c := e.fill("c", "c", 300)
	d := e.fill("d", "d", 300)
	crash := errors.New("crash")
	e.svc.segmentFault = func(string, Ino) error { return crash }
	if _, err := e.svc.SetAttr(e.ctx, c.Ino, SetAttrReq{Valid: SetSize, Size: 5 * 4096}); !errors.Is(err, crash) {
		t.Fatalf("truncate: %v; want the injected crash", err)
	}
	if _, err := e.svc.Commit(e.ctx, CommitReq{Ino: d.Ino, SetSize: true, Size: 5 * 4096}); !errors.Is(err, crash) {
		t.Fatalf("truncate by commit: %v; want the injected crash", err)
	}
	if n := e.pendingDrops(); n != 2 {
		t.Fatalf("%d pending drops, want 2", n)
	}
	if bad, err := e.svc.CheckRefs(e.ctx); err != nil || len(bad) != 0 {
		t.Fatalf("counts between segments: %v %+v", err, bad)
	}
	e.restart()
	e.wantRecipe(c.Ino, "c", 5, 5*4096)
	// Growing c past its old end: blocks 5..299 must read as holes.
	if _, err := e.svc.Commit(e.ctx, CommitReq{Ino: c.Ino, Changes: []BlockChange{{Index: 310, New: hashOf("new")}}, Size: 311 * 4096}); err != nil {
		t.Fatal(err)
	}
	r, err := e.svc.GetRecipe(e.ctx, c.Ino, 0, math.MaxUint64)
	if err != nil {
		t.Fatal(err)
	}
	for i := 5; i < 310; i++ {
		if !r.Blocks[i].IsZero() {
			t.Fatalf("block %d of the grown file is %s, want a hole", i, r.Blocks[i].Short())
		}
	}
	if r.Blocks[310] != hashOf("new") {
		t.Fatal("the new block is missing")
	}
	// d is left alone: the reaper's sweep finishes it.
	if _, err := e.svc.ReapOrphans(e.ctx); err != nil {
		t.Fatal(err)
	}
	e.clean()
	e.wantReleased("c", 5, 300)
	e.wantReleased("d", 5, 300)
	e.wantRecipe(d.Ino, "d", 5, 5*4096)
}

// TestCommitBound: a commit naming more blocks than MaxCommitBlocks, or
// needing more than MaxTxnOps operations, is refused with ErrTooBig
// before anything is written, not by the store at its end.
func TestCommitBound(t *testing.T) {
	commitBoundCase(newSegEnv(t, memkv.New(), segBound))
	e := newSegEnv(t, memkv.New(), DefaultMaxTxnOps)
	big := make([]BlockChange, MaxCommitBlocks+1)
	for i := range big {
		big[i] = BlockChange{Index: uint64(i), New: hashOf(fmt.Sprint("m", i))}
	}
	g := e.fill("g", "g", 0)
	if _, err := e.svc.Commit(e.ctx, CommitReq{Ino: g.Ino, Changes: big, Size: uint64(len(big)) * 4096}); !errors.Is(err, ErrTooBig) {
		t.Fatalf("commit of %d blocks: %v; want ErrTooBig", len(big), err)
	}
	// MaxCommitBlocks of them fit the default bound.
	if _, err := e.svc.Commit(e.ctx, CommitReq{Ino: g.Ino, Changes: big[:MaxCommitBlocks], Size: MaxCommitBlocks * 4096}); err != nil {
		t.Fatalf("commit of %d blocks: %v", MaxCommitBlocks, err)
	}
	e.wantRecipe(g.Ino, "m", MaxCommitBlocks, MaxCommitBlocks*4096)
	// And so do as many replacing blocks (each drops the old block's last
	// reference: a count deleted, a release added).
	for i := range MaxCommitBlocks {
		big[i] = BlockChange{Index: uint64(i), Old: big[i].New, New: hashOf(fmt.Sprint("r", i))}
	}
	if _, err := e.svc.Commit(e.ctx, CommitReq{Ino: g.Ino, Changes: big[:MaxCommitBlocks]}); err != nil {
		t.Fatalf("commit replacing %d blocks: %v", MaxCommitBlocks, err)
	}
	e.wantRecipe(g.Ino, "r", MaxCommitBlocks, MaxCommitBlocks*4096)
	e.wantReleased("m", 0, MaxCommitBlocks)
	e.clean()
}

// commitBoundCase: a commit of more blocks than fit e's bound is refused
// with ErrTooBig, by the Service (not the store), and changes nothing.
func commitBoundCase(e *segEnv) {
	t := e.t
	f := e.fill("f", "f", 2)
	var cs []BlockChange
	n := e.limit + 40
	for i := range n {
		cs = append(cs, BlockChange{Index: uint64(i), New: hashOf(fmt.Sprint("n", i))})
	}
	cs[0].Old, cs[1].Old = hashOf("f0"), hashOf("f1")
	_, err := e.svc.Commit(e.ctx, CommitReq{Ino: f.Ino, Changes: cs, Size: uint64(n) * 4096})
	if !errors.Is(err, ErrTooBig) || errors.Is(err, errBound) {
		t.Fatalf("commit of %d blocks with a bound of %d: %v; want ErrTooBig", n, e.limit, err)
	}
	e.wantRecipe(f.Ino, "f", 2, 2*4096)
}

// TestCommitBytesBound: a commit whose changes lie in many recipe
// segments rewrites each (up to 32 KiB): past MaxTxnBytes it is refused
// with ErrTooBig before the store (etcd's --max-request-bytes) sees it.
func TestCommitBytesBound(t *testing.T) {
	ctx := context.Background()
	svc, err := New(boundStore{Store: memkv.New(), limit: math.MaxInt, bytes: MinTxnBytes},
		Options{BlockSize: 4096, MaxTxnBytes: MinTxnBytes})
	if err != nil {
		t.Fatal(err)
	}
	in, err := svc.Create(ctx, CreateReq{Parent: RootIno, Name: "sparse", Mode: 0o100644})
	if err != nil {
		t.Fatal(err)
	}
	sparse := func(n int) []BlockChange {
		var cs []BlockChange
		for i := range n {
			cs = append(cs, BlockChange{Index: uint64(i)*SegmentBlocks + SegmentBlocks - 1, New: hashOf(fmt.Sprint("s", i))})
		}
		return cs
	}
	_, err = svc.Commit(ctx, CommitReq{Ino: in.Ino, Changes: sparse(40), Size: 40 * SegmentBlocks * 4096})
	if !errors.Is(err, ErrTooBig) || errors.Is(err, errBound) {
		t.Fatalf("commit rewriting 40 segments (1.3 MB): %v; want ErrTooBig", err)
	}
	if _, err := svc.Commit(ctx, CommitReq{Ino: in.Ino, Changes: sparse(20), Size: 20 * SegmentBlocks * 4096}); err != nil {
		t.Fatalf("commit rewriting 20 segments: %v", err)
	}
}
