package client

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"tessera/internal/block"
	"tessera/internal/cachetier/memcache/mctest"
	"tessera/internal/kv/memkv"
	"tessera/internal/meta"
)

// countingMeta counts the stats and xattr reads that reach the meta service.
type countingMeta struct {
	meta.API
	lookups, getattrs, getxattrs atomic.Int64
}

func (m *countingMeta) GetXattr(ctx context.Context, ino meta.Ino, name string) ([]byte, error) {
	m.getxattrs.Add(1)
	return m.API.GetXattr(ctx, ino, name)
}

func (m *countingMeta) Lookup(ctx context.Context, parent meta.Ino, name string) (meta.Inode, error) {
	m.lookups.Add(1)
	return m.API.Lookup(ctx, parent, name)
}

func (m *countingMeta) GetAttr(ctx context.Context, ino meta.Ino) (meta.Inode, error) {
	m.getattrs.Add(1)
	return m.API.GetAttr(ctx, ino)
}

// tierEnv is one meta service and memcached, and clients with the tier.
type tierEnv struct {
	svc *meta.Service
	url string
	mc  *mctest.Server
	// ticks is the clients' clock: it starts at the env's making and moves
	// a nanosecond a reading, so that order is kept but a busy machine's
	// seconds do not age an item past its TTL (a 3 s TTL on the real
	// clock failed so at load 55).
	base  time.Time
	ticks atomic.Int64
}

func newTierEnv(t *testing.T) *tierEnv {
	t.Helper()
	svc, err := meta.New(memkv.New(), meta.Options{})
	if err != nil {
		t.Fatal(err)
	}
	mc := mctest.Start(t, mctest.Options{})
	return &tierEnv{svc: svc, url: "memcached://" + mc.Addr, mc: mc, base: time.Now()}
}

// client makes a client with the tier over its own counting view of the
// service, with policy the mount's default and a settable clock.
func (e *tierEnv) client(t *testing.T, policy string) (*Client, *countingMeta, *atomic.Int64) {
	t.Helper()
	cm := &countingMeta{API: e.svc}
	c, err := New(context.Background(), Config{Meta: cm, Dial: func(meta.Server) (block.Store, error) { return nil, nil },
		Logger: slog.New(slog.DiscardHandler), CacheTier: e.url, Policy: policy})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	var skew atomic.Int64 // added to the env's clock
	c.attrs.now = func() time.Time { return e.base.Add(time.Duration(e.ticks.Add(1) + skew.Load())) }
	return c, cm, &skew
}

// drain waits until a client's queued fills are written: it queues a
// marker behind them on every filler (each runs its queue in order), so
// that a fill taken but still in flight is waited for too (a 20 ms sleep
// for it was too short on a busy machine).
func drain(t *testing.T, c *Client) {
	t.Helper()
	var wg sync.WaitGroup
	for _, q := range c.attrs.fills {
		wg.Add(1)
		q <- wg.Done
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute): // only a hung filler gets here
		t.Fatal("fills not written")
	}
}

func (e *tierEnv) create(t *testing.T, name string) meta.Inode {
	t.Helper()
	in, err := e.svc.Create(context.Background(), meta.CreateReq{Parent: meta.RootIno, Name: name, Mode: 0o100644})
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// seeded creates f and two relaxed clients, the first of which has looked
// f up (filling the tier).
func (e *tierEnv) seeded(t *testing.T) (in meta.Inode, a, b *Client, bm *countingMeta) {
	t.Helper()
	in = e.create(t, "f")
	a, _, _ = e.client(t, "relaxed")
	b, bm, _ = e.client(t, "relaxed")
	if _, err := a.Meta().Lookup(context.Background(), meta.RootIno, "f"); err != nil {
		t.Fatal(err)
	}
	drain(t, a)
	return in, a, b, bm
}

// A stat another client made fills the tier; a second client's stat within
// the policy's TTL is answered from it, without the meta service.
func TestTierStatServedFromTier(t *testing.T) {
	ctx := context.Background()
	in, _, b, bm := newTierEnv(t).seeded(t)
	got, err := b.attrs.CachedLookup(ctx, meta.RootIno, "f")
	if err != nil || got.Ino != in.Ino || got.Change != in.Change {
		t.Fatalf("cached lookup: %+v %v, want inode %d at change %d", got.Attr, err, in.Ino, in.Change)
	}
	if _, err := b.attrs.CachedGetAttr(ctx, in.Ino); err != nil {
		t.Fatal(err)
	}
	if n := bm.lookups.Load() + bm.getattrs.Load(); n != 0 || b.Stats().AttrHits != 2 {
		t.Fatalf("meta asked %d times, %d tier hits; want 0 and 2", n, b.Stats().AttrHits)
	}
	// A name the tier does not hold goes to the service (ENOENT included).
	if _, err := b.attrs.CachedLookup(ctx, meta.RootIno, "nope"); err == nil {
		t.Fatal("lookup of a missing name succeeded")
	}
	if bm.lookups.Load() != 1 {
		t.Fatalf("meta lookups %d, want 1", bm.lookups.Load())
	}
}

// An item older than the policy's attribute TTL is not used; policies whose
// TTL is too short for the tier (session: 1 s) or 0 (posix) neither fill it
// nor ask it once the directory's policy is known.
func TestTierStatRespectsPolicyTTL(t *testing.T) {
	ctx := context.Background()
	e := newTierEnv(t)
	e.create(t, "f")
	a, _, _ := e.client(t, "nfs") // TTL 3 s
	b, bm, skew := e.client(t, "nfs")
	a.Meta().Lookup(ctx, meta.RootIno, "f")
	drain(t, a)
	if _, err := b.attrs.CachedLookup(ctx, meta.RootIno, "f"); err != nil || bm.lookups.Load() != 0 {
		t.Fatalf("fresh item not used: %v, %d meta lookups", err, bm.lookups.Load())
	}
	skew.Store(int64(3100 * time.Millisecond))
	if _, err := b.attrs.CachedLookup(ctx, meta.RootIno, "f"); err != nil || bm.lookups.Load() != 1 {
		t.Fatalf("an item older than the 3 s TTL was used: %v, %d meta lookups", err, bm.lookups.Load())
	}

	for _, pol := range []string{"session", "posix"} {
		p, pm, _ := e.client(t, pol)
		if _, err := p.Meta().GetAttr(ctx, meta.RootIno); err != nil { // learns the root's policy
			t.Fatal(err)
		}
		p.Meta().Lookup(ctx, meta.RootIno, "f")
		drain(t, p)
		gets := p.attrs.pool.Stats()
		for range 3 {
			if _, err := p.attrs.CachedLookup(ctx, meta.RootIno, "f"); err != nil {
				t.Fatal(err)
			}
		}
		after := p.attrs.pool.Stats()
		if pm.lookups.Load() != 4 || after.AttrHits+after.AttrMisses != gets.AttrHits+gets.AttrMisses {
			t.Fatalf("%s: %d meta lookups for 4 stats (want 4), %d tier lookups (want 0)", pol,
				pm.lookups.Load(), after.AttrHits+after.AttrMisses-gets.AttrHits-gets.AttrMisses)
		}
	}
}

// A client sees its own changes at once: an item asked before its change of
// the inode (or of the directory, for a lookup) is not used.
func TestTierStatSeesOwnChanges(t *testing.T) {
	ctx := context.Background()
	in, _, b, _ := newTierEnv(t).seeded(t)
	after, err := b.Meta().SetAttr(ctx, in.Ino, meta.SetAttrReq{Valid: meta.SetMode, Mode: 0o600})
	if err != nil {
		t.Fatal(err)
	}
	got, err := b.attrs.CachedGetAttr(ctx, in.Ino)
	if err != nil || got.Mode&0o777 != 0o600 || got.Change != after.Change {
		t.Fatalf("after its own chmod a client saw mode %o change %d (%v), want 600 at %d", got.Mode&0o777, got.Change, err, after.Change)
	}
	if _, err := b.Meta().Unlink(ctx, meta.RootIno, "f", 0); err != nil {
		t.Fatal(err)
	}
	if _, err := b.attrs.CachedLookup(ctx, meta.RootIno, "f"); err == nil {
		t.Fatal("a client found the name it had just unlinked (served from the tier)")
	}
}

// A dead memcached costs hits, never an error.
func TestTierStatDeadMemcached(t *testing.T) {
	ctx := context.Background()
	e := newTierEnv(t)
	in := e.create(t, "f")
	a, am, _ := e.client(t, "relaxed")
	e.mc.Kill()
	for range 3 {
		got, err := a.attrs.CachedLookup(ctx, meta.RootIno, "f")
		if err != nil || got.Ino != in.Ino {
			t.Fatalf("with memcached dead: %+v %v", got.Attr, err)
		}
		if _, err := a.attrs.CachedGetAttr(ctx, in.Ino); err != nil {
			t.Fatal(err)
		}
	}
	if am.lookups.Load() != 3 || am.getattrs.Load() != 3 {
		t.Fatalf("meta asked %d lookups, %d getattrs; want 3 and 3", am.lookups.Load(), am.getattrs.Load())
	}
}

func queued(c *Client) (n int) {
	for _, q := range c.attrs.fills {
		n += len(q)
	}
	return n
}

// A change a client makes refreshes the tier: another client's stat from
// the tier sees the new size, not the one the create cached.
func TestTierStatSeesOtherClientsCommit(t *testing.T) {
	ctx := context.Background()
	e := newTierEnv(t)
	a, _, _ := e.client(t, "relaxed")
	b, _, _ := e.client(t, "relaxed")
	in, err := a.Meta().Create(ctx, meta.CreateReq{Parent: meta.RootIno, Name: "f", Mode: 0o100644})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Meta().Commit(ctx, meta.CommitReq{Ino: in.Ino, Size: 10}); err != nil {
		t.Fatal(err)
	}
	drain(t, a)
	got, err := b.attrs.CachedLookup(ctx, meta.RootIno, "f")
	if err != nil || got.Size != 10 {
		t.Fatalf("stat on another client after a commit: size %d (%v), want 10", got.Size, err)
	}
	if b.Stats().AttrHits != 1 {
		t.Fatalf("tier hits %d, want 1", b.Stats().AttrHits)
	}
}

// After a rename, a change of the file refreshes no item under its old
// name: the old name lives in the tier only as long as its last lookup
// allows.
func TestTierStatRenameStopsRefresh(t *testing.T) {
	ctx := context.Background()
	e := newTierEnv(t)
	a, _, askew := e.client(t, "relaxed") // TTL 1 min
	b, _, bskew := e.client(t, "relaxed")
	in, err := a.Meta().Create(ctx, meta.CreateReq{Parent: meta.RootIno, Name: "f", Mode: 0o100644})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Meta().Rename(ctx, meta.RootIno, "f", meta.RootIno, "g", 0); err != nil {
		t.Fatal(err)
	}
	// A commit a minute later: a refresh of "f" would make it young again.
	askew.Store(int64(61 * time.Second))
	if _, err := a.Meta().Commit(ctx, meta.CommitReq{Ino: in.Ino, Size: 10}); err != nil {
		t.Fatal(err)
	}
	drain(t, a)
	bskew.Store(int64(61500 * time.Millisecond))
	if _, err := b.attrs.CachedLookup(ctx, meta.RootIno, "f"); err == nil {
		t.Fatal("the old name of a renamed file was found a minute later: its entry item was refreshed")
	}
}
