package metatest

import (
	"errors"
	"fmt"
	"math"
	"syscall"
	"time"

	"tessera/internal/block"
	"tessera/internal/meta"
)

func hashOf(s string) block.Hash { return block.Sum([]byte(s)) }

// walked is one WalkBlocks callback.
type walked struct {
	Ino   meta.Ino
	Index uint64
	Hash  block.Hash
}

func (h *harness) walk() []walked {
	h.t.Helper()
	var out []walked
	err := h.api.WalkBlocks(h.ctx, func(ino meta.Ino, idx uint64, hs block.Hash) error {
		out = append(out, walked{ino, idx, hs})
		return nil
	})
	h.wantErr("walk", err, nil)
	return out
}

func (h *harness) commit(req meta.CommitReq) meta.Inode {
	h.t.Helper()
	in, err := h.api.Commit(h.ctx, req)
	h.wantErr(fmt.Sprintf("commit %d", req.Ino), err, nil)
	return in
}

func (h *harness) recipe(ino meta.Ino, first, count uint64) meta.Recipe {
	h.t.Helper()
	r, err := h.api.GetRecipe(h.ctx, ino, first, count)
	h.wantErr("get recipe", err, nil)
	return r
}

// put is a change from a hole to hashOf(name).
func put(idx uint64, name string) meta.BlockChange {
	return meta.BlockChange{Index: idx, New: hashOf(name)}
}

func testSetAttr(h *harness) {
	f := h.file(meta.RootIno, "f")
	now := h.clock.Advance(time.Second)
	in, err := h.api.SetAttr(h.ctx, f.Ino, meta.SetAttrReq{Valid: meta.SetMode | meta.SetUid | meta.SetGid,
		Mode: syscall.S_IFDIR | 04750, Uid: 11, Gid: 12})
	h.wantErr("setattr", err, nil)
	eq(h, "mode keeps type", in.Mode, uint32(syscall.S_IFREG|04750))
	eq(h, "uid gid", [2]uint32{in.Uid, in.Gid}, [2]uint32{11, 12})
	eq(h, "ctime", in.Ctime, now)
	eq(h, "mtime untouched", in.Mtime, f.Mtime)
	if in.Change <= f.Change {
		h.t.Fatal("setattr did not bump change")
	}
	eq(h, "stored", h.attr(f.Ino).Attr, in.Attr)

	in, err = h.api.SetAttr(h.ctx, f.Ino, meta.SetAttrReq{Valid: meta.SetAtime | meta.SetMtime | meta.SetCtime,
		Atime: 111, Mtime: 222, Ctime: 333})
	h.wantErr("utimes", err, nil)
	eq(h, "times", [3]int64{in.Atime, in.Mtime, in.Ctime}, [3]int64{111, 222, 333})
	same, err := h.api.SetAttr(h.ctx, f.Ino, meta.SetAttrReq{})
	h.wantErr("empty setattr", err, nil)
	eq(h, "empty setattr changes nothing", same.Attr, in.Attr)

	d := h.mkdir(meta.RootIno, "d")
	l, err := h.api.Create(h.ctx, meta.CreateReq{Parent: meta.RootIno, Name: "l", Mode: syscall.S_IFLNK, Target: "t"})
	h.wantErr("symlink", err, nil)
	for _, c := range []struct {
		what string
		ino  meta.Ino
		req  meta.SetAttrReq
		want error
	}{
		{"truncate a dir", d.Ino, meta.SetAttrReq{Valid: meta.SetSize}, meta.ErrIsDir},
		{"truncate a symlink", l.Ino, meta.SetAttrReq{Valid: meta.SetSize}, meta.ErrInvalid},
		{"absent", 4242, meta.SetAttrReq{Valid: meta.SetMode, Mode: 0600}, meta.ErrNotFound},
	} {
		_, err := h.api.SetAttr(h.ctx, c.ino, c.req)
		h.wantErr(c.what, err, c.want)
	}
	in, err = h.api.SetAttr(h.ctx, d.Ino, meta.SetAttrReq{Valid: meta.SetMode, Mode: 01777})
	h.wantErr("chmod dir", err, nil)
	eq(h, "dir mode", in.Mode, uint32(syscall.S_IFDIR|01777))
}

func testTruncate(h *harness) {
	const bs = blockSize
	f := h.file(meta.RootIno, "f")
	h.commit(meta.CommitReq{Ino: f.Ino, Changes: []meta.BlockChange{put(0, "0"), put(1, "1"), put(2, "2"), put(3, "3"), put(1030, "x")},
		Size: 1031 * bs})
	eq(h, "bytes", h.statfs().LogicalBytes, uint64(1031*bs))
	in, err := h.api.SetAttr(h.ctx, f.Ino, meta.SetAttrReq{Valid: meta.SetSize, Size: bs + bs/2})
	h.wantErr("truncate", err, nil)
	eq(h, "size", in.Size, uint64(bs+bs/2))
	eq(h, "bytes after", h.statfs().LogicalBytes, uint64(bs+bs/2))
	r := h.recipe(f.Ino, 0, 100)
	eq(h, "blocks", fmt.Sprint(r.Blocks), fmt.Sprint([]block.Hash{hashOf("0"), hashOf("1")}))
	eq(h, "walked", len(h.walk()), 2)
	_, err = h.api.SetAttr(h.ctx, f.Ino, meta.SetAttrReq{Valid: meta.SetSize, Size: 5 * bs})
	h.wantErr("extend", err, nil)
	r = h.recipe(f.Ino, 0, 100)
	eq(h, "extended", fmt.Sprint(r.Blocks), fmt.Sprint([]block.Hash{hashOf("0"), hashOf("1"), {}, {}, {}}))
	_, err = h.api.SetAttr(h.ctx, f.Ino, meta.SetAttrReq{Valid: meta.SetSize, Size: 0})
	h.wantErr("truncate to 0", err, nil)
	eq(h, "walked after 0", len(h.walk()), 0)
	eq(h, "bytes after 0", h.statfs().LogicalBytes, uint64(0))

	g := h.file(meta.RootIno, "g")
	h.commit(meta.CommitReq{Ino: g.Ino, Changes: []meta.BlockChange{{Index: 0, InlineNew: true, NewInline: []byte("hello world")}}, Size: 11})
	in, err = h.api.SetAttr(h.ctx, g.Ino, meta.SetAttrReq{Valid: meta.SetSize, Size: 5})
	h.wantErr("truncate inline", err, nil)
	eq(h, "inline cut", string(in.Inline), "hello")
	eq(h, "inline kept", in.HasInline, true)
	in, err = h.api.SetAttr(h.ctx, g.Ino, meta.SetAttrReq{Valid: meta.SetSize, Size: 100})
	h.wantErr("extend inline", err, nil)
	eq(h, "inline after extend", string(in.Inline), "hello")
	in, err = h.api.SetAttr(h.ctx, g.Ino, meta.SetAttrReq{Valid: meta.SetSize, Size: 0})
	h.wantErr("truncate inline to 0", err, nil)
	eq(h, "inline dropped", in.HasInline || len(in.Inline) > 0, false)
}

func testCommit(h *harness) {
	const bs = blockSize
	f := h.file(meta.RootIno, "f")
	now := h.clock.Advance(time.Second)
	in := h.commit(meta.CommitReq{Ino: f.Ino, Changes: []meta.BlockChange{put(0, "a"), put(1, "b")}, Size: 2*bs - 10, Mtime: 77})
	eq(h, "size", in.Size, uint64(2*bs-10))
	eq(h, "mtime", in.Mtime, int64(77))
	eq(h, "ctime", in.Ctime, now)
	if in.Change <= f.Change {
		h.t.Fatal("commit did not bump change")
	}
	eq(h, "getattr", h.attr(f.Ino).Attr, in.Attr)
	r := h.recipe(f.Ino, 0, 10)
	eq(h, "recipe", fmt.Sprint(r.Blocks), fmt.Sprint([]block.Hash{hashOf("a"), hashOf("b")}))
	eq(h, "recipe change", r.Change, in.Change)

	in = h.commit(meta.CommitReq{Ino: f.Ino, Size: 5})
	eq(h, "size is max", in.Size, uint64(2*bs-10))
	eq(h, "mtime kept", in.Mtime, int64(77))
	in = h.commit(meta.CommitReq{Ino: f.Ino, Changes: []meta.BlockChange{put(2, "c")}, Size: bs, SetSize: true})
	eq(h, "set size", in.Size, uint64(bs))
	eq(h, "truncated recipe", fmt.Sprint(h.recipe(f.Ino, 0, 10).Blocks), fmt.Sprint([]block.Hash{hashOf("a")}))
	eq(h, "bytes", h.statfs().LogicalBytes, uint64(bs))

	// Across segments, and punching a hole at the end of one.
	far := uint64(3*meta.SegmentBlocks + 7)
	h.commit(meta.CommitReq{Ino: f.Ino, Changes: []meta.BlockChange{put(meta.SegmentBlocks-1, "p"), put(meta.SegmentBlocks, "q"), put(far, "z")},
		Size: (far + 1) * bs})
	r = h.recipe(f.Ino, meta.SegmentBlocks-2, 4)
	eq(h, "across segments", fmt.Sprint(r.Blocks), fmt.Sprint([]block.Hash{{}, hashOf("p"), hashOf("q"), {}}))
	h.commit(meta.CommitReq{Ino: f.Ino, Changes: []meta.BlockChange{{Index: far, Old: hashOf("z")}}})
	eq(h, "hole punched", h.recipe(f.Ino, far, 1).Blocks[0], block.Hash{})
	eq(h, "walked", len(h.walk()), 3)

	d := h.mkdir(meta.RootIno, "d")
	l, err := h.api.Create(h.ctx, meta.CreateReq{Parent: meta.RootIno, Name: "l", Mode: syscall.S_IFLNK, Target: "t"})
	h.wantErr("symlink", err, nil)
	for _, c := range []struct {
		what string
		req  meta.CommitReq
		want error
	}{
		{"dir", meta.CommitReq{Ino: d.Ino}, meta.ErrIsDir},
		{"symlink", meta.CommitReq{Ino: l.Ino}, meta.ErrInvalid},
		{"absent", meta.CommitReq{Ino: 4242}, meta.ErrNotFound},
		{"duplicate index", meta.CommitReq{Ino: f.Ino, Changes: []meta.BlockChange{put(5, "x"), put(5, "y")}}, meta.ErrInvalid},
		{"inline past 0", meta.CommitReq{Ino: f.Ino, Changes: []meta.BlockChange{{Index: 1, InlineNew: true}}}, meta.ErrInvalid},
		{"inline too big", meta.CommitReq{Ino: f.Ino, Changes: []meta.BlockChange{{Index: 0, InlineNew: true,
			NewInline: make([]byte, meta.InlineMax+1)}}, Forced: true}, meta.ErrInvalid},
		{"index overflow", meta.CommitReq{Ino: f.Ino, Changes: []meta.BlockChange{put(math.MaxUint64, "x")}}, meta.ErrInvalid},
	} {
		_, err := h.api.Commit(h.ctx, c.req)
		h.wantErr("commit "+c.what, err, c.want)
	}
}

func testCommitConflict(h *harness) {
	f := h.file(meta.RootIno, "f")
	in := h.commit(meta.CommitReq{Ino: f.Ino, Changes: []meta.BlockChange{put(0, "A")}, Size: 10})
	_, err := h.api.Commit(h.ctx, meta.CommitReq{Ino: f.Ino, Changes: []meta.BlockChange{put(1, "C"), put(0, "B")}, Size: 2 * blockSize})
	if !errors.Is(err, meta.ErrConflict) {
		h.t.Fatalf("stale commit: %v, want a conflict", err)
	}
	var ce *meta.ConflictError
	if !errors.As(err, &ce) {
		h.t.Fatalf("conflict %T is not a *ConflictError", err)
	}
	eq(h, "conflict ino", ce.Ino, f.Ino)
	eq(h, "current", fmt.Sprint(ce.Current), fmt.Sprint([]meta.BlockChange{{Index: 0, New: hashOf("A")}, {Index: 1}}))
	after := h.attr(f.Ino)
	eq(h, "nothing changed", after.Attr, in.Attr)
	eq(h, "recipe unchanged", fmt.Sprint(h.recipe(f.Ino, 0, 10).Blocks), fmt.Sprint([]block.Hash{hashOf("A")}))

	// Redo on top of the current hashes: succeeds.
	h.commit(meta.CommitReq{Ino: f.Ino, Changes: []meta.BlockChange{{Index: 0, Old: hashOf("A"), New: hashOf("B")}, put(1, "C")}, Size: 2 * blockSize})
	// Writers of different blocks do not conflict.
	h.commit(meta.CommitReq{Ino: f.Ino, Changes: []meta.BlockChange{put(2, "D")}, Size: 3 * blockSize})
	h.commit(meta.CommitReq{Ino: f.Ino, Changes: []meta.BlockChange{put(3, "E")}, Size: 4 * blockSize})
	// Forced: installs whatever the old hash.
	h.commit(meta.CommitReq{Ino: f.Ino, Changes: []meta.BlockChange{{Index: 0, Old: hashOf("stale"), New: hashOf("F")}}, Forced: true})
	eq(h, "after forced", fmt.Sprint(h.recipe(f.Ino, 0, 10).Blocks),
		fmt.Sprint([]block.Hash{hashOf("F"), hashOf("C"), hashOf("D"), hashOf("E")}))
}

func testCommitInline(h *harness) {
	f := h.file(meta.RootIno, "f")
	in := h.commit(meta.CommitReq{Ino: f.Ino, Changes: []meta.BlockChange{{Index: 0, InlineNew: true, NewInline: []byte("abc")}}, Size: 3})
	eq(h, "inline", string(in.Inline), "abc")
	eq(h, "has inline", in.HasInline, true)
	lk := h.lookup(meta.RootIno, "f")
	eq(h, "lookup inline", string(lk.Inline), "abc")
	r := h.recipe(f.Ino, 0, 1)
	eq(h, "recipe inline", r.HasInline && string(r.Inline) == "abc" && len(r.Blocks) == 1 && r.Blocks[0].IsZero(), true)
	eq(h, "walk skips inline", len(h.walk()), 0)

	// A stale writer that thought block 0 a hole sees the inline content.
	_, err := h.api.Commit(h.ctx, meta.CommitReq{Ino: f.Ino, Changes: []meta.BlockChange{put(0, "X")}})
	var ce *meta.ConflictError
	if !errors.As(err, &ce) {
		h.t.Fatalf("stale commit over inline: %v", err)
	}
	eq(h, "current inline", fmt.Sprint(ce.Current), fmt.Sprint([]meta.BlockChange{{Index: 0, New: hashOf("abc"), InlineNew: true, NewInline: []byte("abc")}}))

	// Inline compares as the hash of its content; a hash replaces it.
	in = h.commit(meta.CommitReq{Ino: f.Ino, Changes: []meta.BlockChange{{Index: 0, Old: hashOf("abc"), New: hashOf("X")}}, Size: blockSize})
	eq(h, "inline dropped", in.HasInline || len(in.Inline) > 0, false)
	eq(h, "block 0", h.recipe(f.Ino, 0, 1).Blocks[0], hashOf("X"))
	in = h.commit(meta.CommitReq{Ino: f.Ino, Changes: []meta.BlockChange{{Index: 0, Old: hashOf("X"), InlineNew: true}}, Size: 0, SetSize: true})
	eq(h, "empty inline", in.HasInline, false)
	in = h.commit(meta.CommitReq{Ino: f.Ino, Changes: []meta.BlockChange{{Index: 0, InlineNew: true, NewInline: []byte{}}}, Size: 0})
	eq(h, "empty inline at size 0 is no block", in.HasInline, false)
	in = h.commit(meta.CommitReq{Ino: f.Ino, Changes: []meta.BlockChange{{Index: 0, InlineNew: true, NewInline: []byte{}}}, Size: 1})
	eq(h, "empty inline kept below size", in.HasInline, true)
	in = h.commit(meta.CommitReq{Ino: f.Ino, Changes: []meta.BlockChange{{Index: 0, Old: hashOf(""), InlineNew: true,
		NewInline: make([]byte, meta.InlineMax)}}, Size: meta.InlineMax})
	eq(h, "full inline", len(in.Inline), meta.InlineMax)
}

func testGetRecipe(h *harness) {
	f := h.file(meta.RootIno, "f")
	in := h.commit(meta.CommitReq{Ino: f.Ino, Changes: []meta.BlockChange{put(0, "a"), put(1500, "b"), put(2999, "c")}, Size: 3000 * blockSize})
	r := h.recipe(f.Ino, 0, math.MaxUint64)
	eq(h, "len", len(r.Blocks), 3000)
	eq(h, "entries", [3]block.Hash{r.Blocks[0], r.Blocks[1500], r.Blocks[2999]}, [3]block.Hash{hashOf("a"), hashOf("b"), hashOf("c")})
	eq(h, "holes", r.Blocks[1].IsZero() && r.Blocks[2998].IsZero(), true)
	eq(h, "meta", [3]uint64{r.Change, r.Size, r.First}, [3]uint64{in.Change, 3000 * blockSize, 0})
	r = h.recipe(f.Ino, 1500, 1)
	eq(h, "one", fmt.Sprint(r.Blocks, r.First), fmt.Sprint([]block.Hash{hashOf("b")}, 1500))
	eq(h, "tail", len(h.recipe(f.Ino, 2999, 10).Blocks), 1)
	eq(h, "past end", len(h.recipe(f.Ino, 3000, 10).Blocks), 0)
	eq(h, "count 0", len(h.recipe(f.Ino, 5, 0).Blocks), 0)
	eq(h, "no inline", r.HasInline, false)

	big := h.file(meta.RootIno, "big")
	h.commit(meta.CommitReq{Ino: big.Ino, Size: math.MaxInt64})
	r = h.recipe(big.Ino, 0, math.MaxUint64)
	eq(h, "capped", len(r.Blocks), meta.MaxRecipeRun)

	d := h.mkdir(meta.RootIno, "d")
	_, err := h.api.GetRecipe(h.ctx, d.Ino, 0, 1)
	h.wantErr("recipe of dir", err, meta.ErrIsDir)
	_, err = h.api.GetRecipe(h.ctx, 4242, 0, 1)
	h.wantErr("recipe of absent", err, meta.ErrNotFound)
}

func testWalkBlocks(h *harness) {
	a := h.file(meta.RootIno, "a")
	b := h.file(meta.RootIno, "b")
	const n = meta.WalkPage + 100
	var cs []meta.BlockChange
	for i := range uint64(n) {
		cs = append(cs, put(i, fmt.Sprint(i)))
	}
	for len(cs) > 0 { // a commit names at most MaxCommitBlocks
		k := min(len(cs), meta.MaxCommitBlocks)
		h.commit(meta.CommitReq{Ino: b.Ino, Changes: cs[:k], Size: n * blockSize})
		cs = cs[k:]
	}
	h.commit(meta.CommitReq{Ino: a.Ino, Changes: []meta.BlockChange{put(7, "x"), put(2000, "y")}, Size: 2001 * blockSize})
	got := h.walk()
	eq(h, "count", len(got), n+2)
	eq(h, "first", got[0], walked{a.Ino, 7, hashOf("x")})
	eq(h, "second", got[1], walked{a.Ino, 2000, hashOf("y")})
	for i, w := range got[2:] {
		if w != (walked{b.Ino, uint64(i), hashOf(fmt.Sprint(i))}) {
			h.t.Fatalf("entry %d: %+v", i+2, w)
		}
	}
	stop := errors.New("stop")
	calls := 0
	err := h.api.WalkBlocks(h.ctx, func(meta.Ino, uint64, block.Hash) error {
		calls++
		return stop
	})
	if !errors.Is(err, stop) || calls != 1 {
		h.t.Fatalf("walk with stopping fn: %v after %d calls", err, calls)
	}
}
