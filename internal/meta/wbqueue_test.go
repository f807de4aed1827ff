package meta_test

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"

	"tessera/internal/auth"
	"tessera/internal/kv/memkv"
	"tessera/internal/meta"
	"tessera/internal/meta/metatest"
)

type wbEnv struct {
	t     *testing.T
	ctx   context.Context
	s     *meta.Service
	clock *metatest.Clock
	root  meta.Ino
}

func newWBEnv(t *testing.T, mode meta.FilesetMode) *wbEnv {
	store := memkv.New()
	t.Cleanup(func() { store.Close() })
	clock := metatest.NewClock()
	s, err := meta.New(store, meta.Options{Now: clock.Now, After: clock.After})
	if err != nil {
		t.Fatal(err)
	}
	e := &wbEnv{t: t, ctx: context.Background(), s: s, clock: clock}
	fs := e.mk(meta.RootIno, "fs", syscall.S_IFDIR|0o755)
	if _, err := s.CreateFileset(e.ctx, meta.Fileset{Root: fs, Home: "file:///nonexistent", Mode: mode}); err != nil {
		t.Fatal(err)
	}
	e.root = fs
	return e
}

func (e *wbEnv) mk(dir meta.Ino, name string, mode uint32) meta.Ino {
	e.t.Helper()
	in, err := e.s.Create(e.ctx, meta.CreateReq{Parent: dir, Name: name, Mode: mode, Excl: true})
	if err != nil {
		e.t.Fatal(err)
	}
	return in.Ino
}

// ops claims every queued operation (each claim takes what depends on
// nothing earlier; applying none, it sees only the free ones).
func (e *wbEnv) queue() []meta.WBOp {
	e.t.Helper()
	ops, err := e.s.ClaimWriteback(e.ctx, meta.ClaimReq{Root: e.root, Owner: "peek", TTL: time.Nanosecond, Limit: 1000})
	if err != nil {
		e.t.Fatal(err)
	}
	return ops
}

func (e *wbEnv) depth() int {
	e.t.Helper()
	st, err := e.s.WritebackStats(e.ctx, e.root)
	if err != nil {
		e.t.Fatal(err)
	}
	return st.Depth
}

func TestWritebackQueueRecordsChanges(t *testing.T) {
	e := newWBEnv(t, meta.ModeSW)
	d := e.mk(e.root, "d", syscall.S_IFDIR|0o755)
	f := e.mk(d, "f", syscall.S_IFREG|0o644)
	// Writes to a file coalesce into its creation.
	for i := range 3 {
		if _, err := e.s.Commit(e.ctx, meta.CommitReq{Ino: f, Size: uint64(i + 1), Forced: true}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.s.Rename(e.ctx, d, "f", e.root, "g", 0); err != nil {
		t.Fatal(err)
	}
	if err := e.s.Rmdir(e.ctx, e.root, "d"); err != nil {
		t.Fatal(err)
	}
	// Outside the fileset nothing is queued.
	e.mk(meta.RootIno, "outside", syscall.S_IFREG|0o644)
	if got := e.depth(); got != 4 {
		t.Fatalf("depth %d, want 4 (mkdir, put, rename, rmdir)", got)
	}
	// Only the first is free: every later one depends on it (d is a
	// prefix of each path).
	ops := e.queue()
	if len(ops) != 1 || ops[0].Kind != meta.OpMkdir || ops[0].Path != "d" {
		t.Fatalf("free ops %+v, want mkdir d alone", ops)
	}
	e.clock.Advance(time.Second) // the peek's claim ends
	if err := e.s.WritebackDone(e.ctx, ops[0], ""); err != nil {
		t.Fatal(err)
	}
	ops = e.queue()
	if len(ops) != 1 || ops[0].Kind != meta.OpPut || !ops[0].New || ops[0].Path != "d/f" || ops[0].Ver != 3 {
		t.Fatalf("free ops %+v, want one new put of d/f coalesced 3 times", ops)
	}
	e.clock.Advance(time.Second)
	if err := e.s.WritebackDone(e.ctx, ops[0], "tok"); err != nil {
		t.Fatal(err)
	}
	ops = e.queue()
	if len(ops) != 1 || ops[0].Kind != meta.OpRename || ops[0].Path != "d/f" || ops[0].Path2 != "g" {
		t.Fatalf("free ops %+v, want rename d/f -> g", ops)
	}
	if tok, err := e.s.WritebackToken(e.ctx, f); err != nil || tok != "tok" {
		t.Fatalf("token %q, %v", tok, err)
	}
}

func TestWritebackCreateThenRemoveCancels(t *testing.T) {
	e := newWBEnv(t, meta.ModeIW)
	for range 5 {
		e.mk(e.root, "tmp", syscall.S_IFREG|0o644)
		if _, err := e.s.Unlink(e.ctx, e.root, "tmp", 0); err != nil {
			t.Fatal(err)
		}
	}
	if got := e.depth(); got != 0 {
		t.Fatalf("depth %d after create+remove pairs, want 0", got)
	}
	// A claimed creation is not cancelled: its removal is queued.
	e.mk(e.root, "kept", syscall.S_IFREG|0o644)
	ops, err := e.s.ClaimWriteback(e.ctx, meta.ClaimReq{Root: e.root, Owner: "gw", TTL: time.Hour, Limit: 10})
	if err != nil || len(ops) != 1 {
		t.Fatalf("claim: %v %+v", err, ops)
	}
	if _, err := e.s.Unlink(e.ctx, e.root, "kept", 0); err != nil {
		t.Fatal(err)
	}
	if got := e.depth(); got != 2 {
		t.Fatalf("depth %d, want 2 (claimed put, remove)", got)
	}
}

func TestWritebackReadOnlyAndBorders(t *testing.T) {
	e := newWBEnv(t, meta.ModeRO)
	_, err := e.s.Create(e.ctx, meta.CreateReq{Parent: e.root, Name: "x", Mode: syscall.S_IFREG | 0o644})
	if !errors.Is(err, syscall.EROFS) {
		t.Fatalf("create in ro fileset: %v, want EROFS", err)
	}
	// Ingest is allowed, and queues nothing.
	ing, err := e.s.Create(meta.WithoutWriteback(e.ctx), meta.CreateReq{Parent: e.root, Name: "x", Mode: syscall.S_IFREG | 0o644})
	if err != nil {
		t.Fatal(err)
	}
	// So is the gateway's, by its role over the wire.
	gw := auth.NewContext(e.ctx, auth.Identity{Name: "gw0", Role: auth.RoleGateway})
	if _, err := e.s.Create(gw, meta.CreateReq{Parent: e.root, Name: "y", Mode: syscall.S_IFREG | 0o644}); err != nil {
		t.Fatal(err)
	}
	// A read's access time is not an update.
	if _, err := e.s.SetAttr(e.ctx, ing.Ino, meta.SetAttrReq{Valid: meta.SetAtime, Atime: 5}); err != nil {
		t.Fatalf("atime in ro fileset: %v", err)
	}
	if _, err := e.s.SetAttr(e.ctx, ing.Ino, meta.SetAttrReq{Valid: meta.SetMode, Mode: 0o600}); !errors.Is(err, syscall.EROFS) {
		t.Fatalf("chmod in ro fileset: %v, want EROFS", err)
	}
	// The xattr calls refuse before they look at the attribute: EROFS,
	// not ENODATA for one absent or EEXIST for one present.
	if err := e.s.RemoveXattr(e.ctx, ing.Ino, "user.absent"); !errors.Is(err, syscall.EROFS) {
		t.Fatalf("removexattr of an absent attribute in ro fileset: %v, want EROFS", err)
	}
	if err := e.s.SetXattr(meta.WithoutWriteback(e.ctx), ing.Ino, "user.k", []byte("v"), 0); err != nil {
		t.Fatal(err)
	}
	if err := e.s.SetXattr(e.ctx, ing.Ino, "user.k", []byte("w"), meta.XattrCreate); !errors.Is(err, syscall.EROFS) {
		t.Fatalf("setxattr create of a present attribute in ro fileset: %v, want EROFS", err)
	}
	if got := e.depth(); got != 0 {
		t.Fatalf("depth %d, want 0", got)
	}

	lu := newWBEnv(t, meta.ModeLU)
	lu.mk(lu.root, "local", syscall.S_IFREG|0o644)
	if got := lu.depth(); got != 0 {
		t.Fatalf("lu fileset queued %d operations, want none (local updates stay local)", got)
	}

	w := newWBEnv(t, meta.ModeSW)
	w.mk(meta.RootIno, "out", syscall.S_IFREG|0o644)
	if _, err := w.s.Rename(w.ctx, meta.RootIno, "out", w.root, "in", 0); !errors.Is(err, syscall.EXDEV) {
		t.Fatalf("rename into the fileset: %v, want EXDEV", err)
	}
	in := w.mk(w.root, "in", syscall.S_IFREG|0o644)
	if _, err := w.s.Link(w.ctx, in, w.root, "hard"); !errors.Is(err, syscall.ENOTSUP) {
		t.Fatalf("link in the fileset: %v, want ENOTSUP", err)
	}
	if got := w.depth(); got != 1 {
		t.Fatalf("depth %d, want 1 (the create; refused changes queue nothing)", got)
	}
}

func TestOverlaps(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"a", "a", true}, {"a", "a/b", true}, {"a/b", "a", true}, {"", "x", true},
		{"a", "ab", false}, {"a/b", "a/c", false}, {"ab/c", "a", false},
	} {
		if got := meta.Overlaps(c.a, c.b); got != c.want {
			t.Errorf("Overlaps(%q, %q) = %v", c.a, c.b, got)
		}
	}
}

// TestWritebackReachedIsClean: once a file's last Put is applied at home,
// the file is clean: eviction takes a file read from home and changed
// locally, and the removal of a name gone at home takes a file made in
// the cache (both were refused as dirty, their sections stale).
func TestWritebackReachedIsClean(t *testing.T) {
	e := newWBEnv(t, meta.ModeIW)
	ing := meta.WithoutWriteback(e.ctx)
	h, err := e.s.Create(ing, meta.CreateReq{Parent: e.root, Name: "h", Mode: syscall.S_IFREG | 0o644})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.s.SetGateway(ing, h.Ino, meta.GatewayInfo{Fileset: e.root, HomePath: "h", HomeMtime: h.Mtime, Token: "t0", State: meta.CacheCached}, 0); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Second)
	if _, err := e.s.SetAttr(e.ctx, h.Ino, meta.SetAttrReq{Valid: meta.SetSize, Size: 5}); err != nil {
		t.Fatal(err)
	}
	l := e.mk(e.root, "l", syscall.S_IFREG|0o644)
	ops, err := e.s.ClaimWriteback(e.ctx, meta.ClaimReq{Root: e.root, Owner: "gw", TTL: time.Hour, Limit: 10})
	if err != nil || len(ops) != 2 {
		t.Fatalf("claimed %v, %v; want the Puts of h and l", ops, err)
	}
	for _, op := range ops {
		if err := e.s.WritebackDone(e.ctx, op, fmt.Sprintf("t-%d", op.Ino)); err != nil {
			t.Fatal(err)
		}
	}
	in, err := e.s.EvictData(e.ctx, h.Ino)
	if err != nil || in.Gateway.State != meta.CachePlaceholder || in.Gateway.HomeSize != 5 {
		t.Fatalf("evict of h, written back: %+v, %v; want a placeholder of 5 bytes", in.Gateway, err)
	}
	if err := e.s.RemoveVanished(e.ctx, e.root, "l", l, false); err != nil {
		t.Fatalf("removal of l, written back and gone at home: %v", err)
	}
}
