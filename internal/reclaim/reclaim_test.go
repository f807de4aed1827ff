package reclaim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"tessera/internal/block"
	blockclient "tessera/internal/block/client"
	"tessera/internal/block/disk"
	blockserver "tessera/internal/block/server"
	"tessera/internal/kv/memkv"
	"tessera/internal/logtest"
	"tessera/internal/meta"
	"tessera/internal/meta/metatest"
)

// env is a meta service over memkv on the real clock (release times are
// compared with the block files' times) and three block servers (disk
// stores behind their HTTP handlers); the reclaimer's clock is a fake one,
// started at the real time.
type env struct {
	t      *testing.T
	ctx    context.Context
	svc    *meta.Service
	clock  *metatest.Clock
	stores map[string]*disk.Store
	addrs  map[string]string
	down   map[string]*atomic.Bool  // a server that fails every removal while set
	calls  map[string]*atomic.Int64 // RemoveMany calls per server
	asked  map[string]*atomic.Int64 // removals asked of each server
	logs   *logtest.Buffer
}

func newEnv(t *testing.T) *env {
	store := memkv.New()
	t.Cleanup(func() { store.Close() })
	svc, err := meta.New(store, meta.Options{BlockSize: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, ctx: context.Background(), svc: svc, clock: metatest.NewClock(), stores: map[string]*disk.Store{},
		addrs: map[string]string{}, down: map[string]*atomic.Bool{}, calls: map[string]*atomic.Int64{},
		asked: map[string]*atomic.Int64{}, logs: &logtest.Buffer{}}
	for _, id := range []string{"b0", "b1", "b2"} {
		st, err := disk.Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(blockserver.New(st, blockserver.Options{}))
		t.Cleanup(func() { hs.Close(); st.Close() })
		e.stores[id], e.addrs[id] = st, strings.TrimPrefix(hs.URL, "http://")
		e.down[id], e.calls[id], e.asked[id] = new(atomic.Bool), new(atomic.Int64), new(atomic.Int64)
		if _, err := svc.RegisterServer(e.ctx, meta.Server{ID: id, Addr: e.addrs[id]}); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// reclaimer returns a reclaimer of the env with a 30 s window on the fake
// clock, set to the real time now.
func (e *env) reclaimer() *Reclaimer {
	e.clock.Advance(time.Until(e.clock.Now()) * -1)
	return New(Config{
		Meta: e.svc,
		Dial: func(s meta.Server) (Remover, error) {
			return &flaky{Remover: blockclient.New(s.Addr, blockclient.Options{Tries: 1}), down: e.down[s.ID], calls: e.calls[s.ID], asked: e.asked[s.ID]}, nil
		},
		After:  30 * time.Second,
		Now:    e.clock.Now,
		Logger: slog.New(slog.NewTextHandler(e.logs, nil)),
	})
}

// flaky is a Remover that fails while down is set, and counts the calls
// made to it and the removals they asked for.
type flaky struct {
	Remover
	down  *atomic.Bool
	calls *atomic.Int64
	asked *atomic.Int64
}

func (f *flaky) RemoveMany(ctx context.Context, rs []block.Removal) ([]bool, error) {
	f.calls.Add(1)
	f.asked.Add(int64(len(rs)))
	if f.down.Load() {
		return nil, fmt.Errorf("remove %d blocks: %w", len(rs), block.ErrUnavailable)
	}
	return f.Remover.RemoveMany(ctx, rs)
}

// put stores a block with the given content on the servers named.
func (e *env) put(content string, ids ...string) block.Hash {
	e.t.Helper()
	data := []byte(content + strings.Repeat(".", 4096))
	h := block.Sum(data)
	for _, id := range ids {
		if err := e.stores[id].Put(e.ctx, h, data); err != nil {
			e.t.Fatal(err)
		}
	}
	return h
}

func (e *env) create(name string) meta.Ino {
	e.t.Helper()
	in, err := e.svc.Create(e.ctx, meta.CreateReq{Parent: meta.RootIno, Name: name, Mode: syscall.S_IFREG | 0o644})
	if err != nil {
		e.t.Fatal(err)
	}
	return in.Ino
}

// commit sets block idx of ino to h.
func (e *env) commit(ino meta.Ino, idx uint64, h block.Hash) {
	e.t.Helper()
	req := meta.CommitReq{Ino: ino, Forced: true, Size: (idx + 1) << 16, Changes: []meta.BlockChange{{Index: idx, New: h}}}
	if _, err := e.svc.Commit(e.ctx, req); err != nil {
		e.t.Fatal(err)
	}
}

// holders returns the servers holding h, in ID order.
func (e *env) holders(h block.Hash) []string {
	var out []string
	for _, id := range []string{"b0", "b1", "b2"} {
		if ok, err := e.stores[id].Has(e.ctx, []block.Hash{h}); err != nil {
			e.t.Fatal(err)
		} else if ok[0] {
			out = append(out, id)
		}
	}
	return out
}

func (e *env) wantHolders(what string, h block.Hash, want ...string) {
	e.t.Helper()
	if got := e.holders(h); fmt.Sprint(got) != fmt.Sprint(want) {
		e.t.Errorf("%s: block %s on %v, want %v", what, h.Short(), got, want)
	}
}

func (e *env) releases() []meta.Release {
	e.t.Helper()
	rs, _, err := e.svc.Releases(e.ctx, meta.Release{}, math.MaxInt64, 1000)
	if err != nil {
		e.t.Fatal(err)
	}
	return rs
}

func (e *env) round(r *Reclaimer) Report {
	e.t.Helper()
	rep, err := r.Round(e.ctx)
	if err != nil {
		e.t.Fatalf("round: %v", err)
	}
	return rep
}

// TestReclaim: released blocks go from every server once the window has
// passed, extra copies included; live blocks stay, a block uploaded again
// after its release stays, and a block named again is not removed.
func TestReclaim(t *testing.T) {
	e := newEnv(t)
	f, g, k := e.create("f"), e.create("g"), e.create("k")

	a := e.put("a", "b0", "b1", "b2") // a third copy beyond R=2
	b := e.put("b", "b1", "b2")
	c := e.put("c", "b0", "b2")
	x := e.put("x", "b0", "b1")
	e.commit(f, 0, a)
	e.commit(f, 1, b)
	e.commit(g, 0, c)
	e.commit(g, 1, x)

	// Overwrites release a, b and x.
	d := e.put("d", "b0", "b1")
	e.commit(f, 0, d)
	ee := e.put("e", "b1", "b2")
	e.commit(f, 1, ee)
	e.commit(g, 1, c)
	// Another client writes b again after its release (its Put refreshes
	// the copies it finds), and x is named again by a commit.
	time.Sleep(2 * time.Millisecond) // the release and the Put are apart on the real clock
	e.put("b", "b1", "b2")
	e.commit(k, 0, x)
	if n := len(e.releases()); n != 3 {
		t.Fatalf("%d releases after the overwrites, want 3 (a, b, x)", n)
	}

	r := e.reclaimer()
	if rep := e.round(r); rep.Due != 0 || rep.Removed != 0 {
		t.Fatalf("round within the window: %+v, want nothing due", rep)
	}
	e.wantHolders("within the window", a, "b0", "b1", "b2")

	e.clock.Advance(31 * time.Second)
	rep := e.round(r)
	if rep.Due != 3 || rep.Stale != 1 || rep.Done != 2 || rep.Removed != 3 || rep.Waiting != 0 {
		t.Errorf("round past the window: %+v, want 3 due, 1 stale (x), 2 done, a's 3 copies removed", rep)
	}
	e.wantHolders("released block", a)
	e.wantHolders("block uploaded again after its release", b, "b1", "b2")
	e.wantHolders("block named again", x, "b0", "b1")
	e.wantHolders("live block", c, "b0", "b2")
	e.wantHolders("live block", d, "b0", "b1")
	e.wantHolders("live block", ee, "b1", "b2")
	if rs := e.releases(); len(rs) != 0 {
		t.Errorf("releases left after the round: %+v", rs)
	}
	// The client that uploaded b commits it now: the recipe names a block
	// that is there.
	e.commit(k, 1, b)
	e.wantHolders("b after its commit", b, "b1", "b2")
	if rep := e.round(r); rep.Due != 0 {
		t.Errorf("a second round: %+v, want nothing left", rep)
	}
}

// TestReclaimUnlink: a deleted file's blocks go, those it shared with a
// live file stay.
func TestReclaimUnlink(t *testing.T) {
	e := newEnv(t)
	f, g := e.create("f"), e.create("g")
	own := e.put("own", "b0", "b1")
	shared := e.put("shared", "b1", "b2")
	e.commit(f, 0, own)
	e.commit(f, 1, shared)
	e.commit(g, 0, shared)
	if _, err := e.svc.Unlink(e.ctx, meta.RootIno, "f", f); err != nil {
		t.Fatal(err)
	}
	r := e.reclaimer()
	e.clock.Advance(time.Minute)
	if rep := e.round(r); rep.Removed != 2 || rep.Done != 1 {
		t.Errorf("round: %+v, want own's 2 copies removed", rep)
	}
	e.wantHolders("the deleted file's block", own)
	e.wantHolders("the block it shared", shared, "b1", "b2")
}

// TestReclaimServerDown: a server that does not answer keeps the release;
// it is retried for that server alone, after a backoff, logged once, and
// finished when the server answers; a release older than GiveUpAfter is
// left to the full collection.
func TestReclaimServerDown(t *testing.T) {
	e := newEnv(t)
	f := e.create("f")
	a := e.put("a", "b0", "b2")
	e.commit(f, 0, a)
	e.commit(f, 0, e.put("a2", "b0", "b2"))

	r := e.reclaimer()
	e.down["b2"].Store(true)
	e.clock.Advance(time.Minute)
	if rep := e.round(r); rep.Removed != 1 || rep.Waiting != 1 || rep.Done != 0 {
		t.Fatalf("round with b2 down: %+v, want the copy on b0 removed and the release waiting", rep)
	}
	e.wantHolders("with b2 down", a, "b2")
	if n := len(e.releases()); n != 1 {
		t.Fatalf("%d releases with b2 down, want 1 kept", n)
	}
	calls := func() (b0, b2 int64) { return e.calls["b0"].Load(), e.calls["b2"].Load() }
	b0, b2 := calls()
	if rep := e.round(r); rep.Waiting != 1 {
		t.Errorf("an immediate second round: %+v, want the release waiting", rep)
	}
	if n0, n2 := calls(); n0 != b0 || n2 != b2 {
		t.Errorf("an immediate second round asked the servers again (b0 %d -> %d, b2 %d -> %d): want a backoff", b0, n0, b2, n2)
	}
	e.clock.Advance(maxBackoff)
	e.round(r)
	if n0, n2 := calls(); n0 != b0 || n2 != b2+1 {
		t.Errorf("the retry asked b0 %d more times and b2 %d: want b2 alone, once", n0-b0, n2-b2)
	}
	if n := strings.Count(e.logs.String(), "not reachable"); n != 1 {
		t.Errorf("the unreachable server was logged %d times, want once:\n%s", n, e.logs)
	}

	e.down["b2"].Store(false)
	e.clock.Advance(maxBackoff)
	if rep := e.round(r); rep.Removed != 1 || rep.Done != 1 {
		t.Errorf("round with b2 back: %+v, want its copy removed and the release done", rep)
	}
	e.wantHolders("with b2 back", a)
	if n := len(e.releases()); n != 0 {
		t.Errorf("%d releases left", n)
	}
	if !strings.Contains(e.logs.String(), "answers again") {
		t.Errorf("no log of the server answering again:\n%s", e.logs)
	}

	// Given up on after GiveUpAfter: the full walk will find the copy.
	e.commit(f, 0, e.put("b", "b0", "b2")) // releases a2
	r = e.reclaimer()
	e.down["b2"].Store(true)
	e.clock.Advance(DefaultGiveUpAfter + time.Second)
	if rep := e.round(r); rep.GaveUp != 1 || rep.Removed != 1 {
		t.Errorf("round past GiveUpAfter with b2 down: %+v, want b0's copy removed and the release given up", rep)
	}
	if n := len(e.releases()); n != 0 {
		t.Errorf("%d releases left after giving up", n)
	}
}

// TestReclaimMetaErrors: a round reports the meta service's failures.
func TestReclaimMetaErrors(t *testing.T) {
	r := New(Config{Meta: failingMeta{}, Dial: func(meta.Server) (Remover, error) { return nil, nil }})
	if _, err := r.Round(context.Background()); !errors.Is(err, meta.ErrIO) {
		t.Fatalf("round over a failing meta service: %v, want its error", err)
	}
}

type failingMeta struct{}

func (failingMeta) Servers(context.Context) (meta.ServerMap, error) { return meta.ServerMap{}, nil }
func (failingMeta) Releases(context.Context, meta.Release, int64, int) ([]meta.Release, bool, error) {
	return nil, false, meta.ErrIO
}
func (failingMeta) DropReleases(context.Context, []meta.Release) error { return meta.ErrIO }

// TestReclaimSkipsAServerOutOfReachForTheRound: once a server fails as
// unavailable, the rest of the round leaves its removals waiting without
// asking it again; the copies on the servers that answer still go, and
// the next round asks it again. (Before, every release of the round asked
// it: a cut-off server cost each release a full timeout.) The releases
// span two pages: the second does not ask the server the first found
// unreachable.
func TestReclaimSkipsAServerOutOfReachForTheRound(t *testing.T) {
	e := newEnv(t)
	f := e.create("f")
	const n = page + 40
	for i := range n {
		e.commit(f, uint64(i), e.put(fmt.Sprintf("old%d", i), "b0", "b2"))
		e.commit(f, uint64(i), e.put(fmt.Sprintf("new%d", i), "b0", "b1"))
	}
	r := e.reclaimer()
	e.down["b2"].Store(true)
	e.clock.Advance(time.Minute)
	rep := e.round(r)
	if rep.Removed != n || rep.Waiting != n {
		t.Errorf("round with b2 down: %+v, want b0's %d copies removed and %d releases waiting", rep, n, n)
	}
	if got := e.calls["b2"].Load(); got != 1 {
		t.Errorf("the round asked the unreachable b2 %d times over 2 pages; want once (the first page)", got)
	}
	if got := e.calls["b0"].Load(); got != 2 {
		t.Errorf("the round asked b0 %d times over 2 pages; want once per page", got)
	}
	if n := strings.Count(e.logs.String(), "not reachable"); n != 1 {
		t.Errorf("the unreachable server was logged %d times, want once:\n%s", n, e.logs)
	}
	e.down["b2"].Store(false)
	e.clock.Advance(maxBackoff)
	before := e.calls["b2"].Load()
	if rep := e.round(r); rep.Done != n || rep.Removed != n {
		t.Errorf("round with b2 back: %+v, want all %d releases done and b2's %d copies removed", rep, n, n)
	}
	if got := e.calls["b2"].Load() - before; got != 2 {
		t.Errorf("the next round asked b2 %d times over 2 pages; want once per page", got)
	}
}

// TestReclaimBatchesPerServer: a round asks each server once per page of
// releases, for all of the page's releases at once, not once per block;
// every server is asked for every release (copies beyond the placement
// included), each with its own release time as the cutoff: a copy touched
// after its release stays, though the page has later releases.
func TestReclaimBatchesPerServer(t *testing.T) {
	e := newEnv(t)
	f := e.create("f")
	const n = page + 10 // two pages
	for i := range n {
		e.commit(f, uint64(i), e.put(fmt.Sprintf("old%d", i), "b0", "b1", "b2"))
		e.commit(f, uint64(i), e.put(fmt.Sprintf("new%d", i), "b0", "b1"))
	}
	// The first release's copy on b2 is touched after that release but
	// before the last release of the page: a cutoff shared by the page
	// would take it.
	rs := e.releases()
	first, last := rs[0], rs[page-1]
	if last.At-first.At < 2 {
		t.Fatalf("the page's releases are %d ns apart: no time between them", last.At-first.At)
	}
	between := time.Unix(0, first.At+(last.At-first.At)/2)
	if err := os.Chtimes(e.stores["b2"].Path(first.Hash), between, between); err != nil {
		t.Fatal(err)
	}
	r := e.reclaimer()
	e.clock.Advance(time.Minute)
	if rep := e.round(r); rep.Due != n || rep.Done != n || rep.Removed != 3*n-1 || rep.Waiting != 0 {
		t.Errorf("round: %+v, want %d releases done and %d copies removed", rep, n, 3*n-1)
	}
	e.wantHolders("a copy touched after its release", first.Hash, "b2")
	for _, id := range []string{"b0", "b1", "b2"} {
		if calls, asked := e.calls[id].Load(), e.asked[id].Load(); calls != 2 || asked != n {
			t.Errorf("server %s: %d calls for %d removals; want 2 (one per page) for %d", id, calls, asked, n)
		}
	}
	if rs := e.releases(); len(rs) != 0 {
		t.Errorf("%d releases left", len(rs))
	}
}
