package meta_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"sync"
	"syscall"
	"testing"
	"time"

	"tessera/internal/block"
	"tessera/internal/kv"
	"tessera/internal/kv/memkv"
	"tessera/internal/meta"
	"tessera/internal/meta/metatest"
)

// sharedServices returns n Services over one store (memkv: its in-process
// change feed is what etcd's watches are to meta processes), each with its
// background work (ServeShared) running until the test ends, unless
// serve is false.
func sharedServices(t *testing.T, store kv.Store, opts meta.Options, n int, serve bool) []*meta.Service {
	t.Helper()
	opts.Shared = true
	var out []*meta.Service
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	for range n {
		s, err := meta.New(store, opts)
		if err != nil {
			t.Fatal(err)
		}
		if serve {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := s.ServeShared(ctx); err != nil {
					t.Error(err)
				}
			}()
		}
		out = append(out, s)
	}
	return out
}

func mkfile(t *testing.T, api meta.API, name string) meta.Inode {
	t.Helper()
	in, err := api.Create(context.Background(), meta.CreateReq{Parent: meta.RootIno, Name: name, Mode: syscall.S_IFREG | 0o644, Excl: true})
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// awaitCallback polls session id of s until it is called back about ino,
// and returns that callback. The loop is bounded: a callback that never
// comes fails the test.
func awaitCallback(t *testing.T, s *meta.Service, id meta.SessionID, ino meta.Ino) meta.Callback {
	t.Helper()
	for range 60 {
		cbs, err := s.Callbacks(context.Background(), id, 0, 500*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		for _, cb := range cbs {
			if cb.Ino == ino {
				return cb
			}
		}
	}
	t.Fatalf("session %x was never called back about inode %d", id, ino)
	return meta.Callback{}
}

// TestCallbackCrossesServices: a change committed through one Service
// reaches a lease holder whose session lives in another, as an
// invalidation (issue 13, "a lease callback crosses metas").
func TestCallbackCrossesServices(t *testing.T) {
	svcs := sharedServices(t, memkv.New(), meta.Options{}, 2, true)
	callbackCrosses(t, svcs[0], svcs[1])
}

func callbackCrosses(t *testing.T, a, b *meta.Service) {
	ctx := context.Background()
	f := mkfile(t, a, "f")
	sb, err := b.OpenSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.WithSession(sb.ID).GetAttr(ctx, f.Ino); err != nil {
		t.Fatal(err)
	}
	if _, err := a.SetAttr(ctx, f.Ino, meta.SetAttrReq{Valid: meta.SetMode, Mode: 0o600}); err != nil {
		t.Fatal(err)
	}
	if cb := awaitCallback(t, b, sb.ID, f.Ino); cb.Kind != meta.CallbackInvalidate {
		t.Fatalf("callback %+v, want an invalidation", cb)
	}
	// Commits are called back too, and so is the holder after it read
	// again (a new lease).
	in, err := b.WithSession(sb.ID).GetAttr(ctx, f.Ino)
	if err != nil || in.Mode&0o777 != 0o600 {
		t.Fatalf("getattr through b: mode %o, %v; want 600", in.Mode&0o777, err)
	}
	seq := uint64(0)
	if cbs, err := b.Callbacks(ctx, sb.ID, 0, 0); err == nil && len(cbs) > 0 {
		seq = cbs[len(cbs)-1].Seq
	}
	if _, err := b.Callbacks(ctx, sb.ID, seq, 0); err != nil { // acknowledge everything so far
		t.Fatal(err)
	}
	if _, err := a.Commit(ctx, meta.CommitReq{Ino: f.Ino, Size: 10, Changes: []meta.BlockChange{{Index: 0, New: block.Sum([]byte("one"))}}}); err != nil {
		t.Fatal(err)
	}
	if cb := awaitCallback(t, b, sb.ID, f.Ino); cb.Kind != meta.CallbackInvalidate {
		t.Fatalf("callback %+v, want an invalidation", cb)
	}
}

// TestSyncCrossesServices: a Sync change through one Service returns only
// once the lease holders of another acknowledged their invalidation, so
// Sync (posix, O_SYNC) keeps its meaning across Services.
func TestSyncCrossesServices(t *testing.T) {
	svcs := sharedServices(t, memkv.New(), meta.Options{}, 3, true)
	syncCrosses(t, svcs[0], svcs[1], svcs[2])
}

func syncCrosses(t *testing.T, a, b, c *meta.Service) {
	ctx := context.Background()
	f := mkfile(t, a, "f")
	sb, err := b.OpenSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.WithSession(sb.ID).GetAttr(ctx, f.Ino); err != nil {
		t.Fatal(err)
	}
	sc, err := c.OpenSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.WithSession(sc.ID).GetAttr(ctx, f.Ino); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := a.SetAttr(ctx, f.Ino, meta.SetAttrReq{Valid: meta.SetMode, Mode: 0o600, Sync: true})
		done <- err
	}()
	cbB := awaitCallback(t, b, sb.ID, f.Ino)
	cbC := awaitCallback(t, c, sc.ID, f.Ino)
	if _, err := b.Callbacks(ctx, sb.ID, cbB.Seq, 0); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		t.Fatalf("the Sync change returned (%v) before every holder acknowledged", err)
	default:
	}
	if _, err := c.Callbacks(ctx, sc.ID, cbC.Seq, 0); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the Sync change did not return once its holders acknowledged")
	}
	in, err := b.WithSession(sb.ID).GetAttr(ctx, f.Ino)
	if err != nil || in.Mode&0o777 != 0o600 {
		t.Fatalf("getattr through b after the change: mode %o, %v; want 600", in.Mode&0o777, err)
	}
}

// waitFor spins (bounded) until cond holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for range 20000 {
		if cond() {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("never: %s", what)
}

// tidyUntil advances the clock a tidying period at a time, each once the
// Services wait on it, until cond holds: a lease record goes after a whole
// round unheld and unused, so dropping it takes two rounds or more.
func tidyUntil(t *testing.T, clock *metatest.Clock, what string, cond func() bool) {
	t.Helper()
	for range 4 {
		waitFor(t, "the Services wait on the clock", func() bool { return clock.Waiters() >= 2 })
		clock.Advance(meta.DefaultSessionTTL / 3)
		for range 2000 {
			if cond() {
				return
			}
			time.Sleep(time.Millisecond)
		}
	}
	waitFor(t, what, cond) // a slow machine: the rounds ran, their work may not have
}

// TestSyncReleasedWhenHolderLapses: a Sync change does not wait for a
// holder whose Service died longer than its liveness lasts.
func TestSyncReleasedWhenHolderLapses(t *testing.T) {
	ctx := context.Background()
	clock := metatest.NewClock()
	svcs := sharedServices(t, memkv.New(), meta.Options{Now: clock.Now, After: clock.After}, 2, false)
	a, b := svcs[0], svcs[1] // b "dies" after the grant: it never delivers
	f := mkfile(t, a, "f")
	sb, err := b.OpenSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.WithSession(sb.ID).GetAttr(ctx, f.Ino); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := a.SetAttr(ctx, f.Ino, meta.SetAttrReq{Valid: meta.SetMode, Mode: 0o600, Sync: true})
		done <- err
	}()
	waitFor(t, "the Sync change waits on the clock", func() bool { return clock.Waiters() > 0 })
	clock.Advance(meta.DefaultSessionTTL / 2)
	waitFor(t, "the Sync change waits again", func() bool { return clock.Waiters() > 0 })
	select {
	case err := <-done:
		t.Fatalf("the Sync change returned (%v) while its holder's Service was live", err)
	default:
	}
	for range 10 {
		clock.Advance(meta.DefaultSessionTTL / 2)
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
	t.Fatal("the Sync change still waits for a holder whose Service lapsed")
}

// TestOpenHeldThroughOtherService: an orphan held open by a session of one
// Service is not deleted through another, and goes at its last release.
func TestOpenHeldThroughOtherService(t *testing.T) {
	ctx := context.Background()
	svcs := sharedServices(t, memkv.New(), meta.Options{}, 2, true)
	a, b := svcs[0], svcs[1]
	f := mkfile(t, a, "f")
	sb, err := b.OpenSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	bb := b.WithSession(sb.ID)
	if _, err := bb.HoldOpen(ctx, f.Ino); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Unlink(ctx, meta.RootIno, "f", f.Ino); err != nil {
		t.Fatal(err)
	}
	if n, err := a.ReapOrphans(ctx); err != nil || n != 0 {
		t.Fatalf("reaper of a: %d reaped, %v; want none", n, err)
	}
	if err := a.Reap(ctx, f.Ino); err != nil {
		t.Fatal(err)
	}
	if in, err := a.GetAttr(ctx, f.Ino); err != nil || in.Nlink != 0 {
		t.Fatalf("held orphan through a: nlink %d, %v; want it there with nlink 0", in.Nlink, err)
	}
	if err := bb.ReleaseOpen(ctx, f.Ino); err != nil {
		t.Fatal(err)
	}
	// b deletes its open record in a batch after the release
	// (opendrops.go), and reaps the orphan then.
	meta.FlushOpenDrops(b)
	if _, err := a.GetAttr(ctx, f.Ino); !errors.Is(err, meta.ErrNotFound) {
		t.Fatalf("released orphan: %v, want it gone", err)
	}
}

// hasKeyOf reports whether store holds a key of a shared-state family
// (pfx: 'M', 'L', 'O' or 'C') naming Service mid.
func hasKeyOf(t *testing.T, store kv.Store, pfx byte, mid meta.MetaID) bool {
	t.Helper()
	id := binary.BigEndian.AppendUint64(nil, uint64(mid))
	found := false
	err := store.View(context.Background(), func(tx kv.Txn) error {
		return tx.Scan([]byte{pfx}, kv.PrefixEnd([]byte{pfx}), func(k, _ []byte) (bool, error) {
			switch {
			case (pfx == 'M' || pfx == 'C') && bytes.HasPrefix(k[1:], id):
				found = true
			case (pfx == 'L' || pfx == 'O') && len(k) == 17 && bytes.Equal(k[9:], id):
				found = true
			}
			return !found, nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// TestLapsedServiceOpensHoldForGrace: the open records of a Service whose
// liveness lapsed hold their orphans for the orphan grace (its clients fail
// over and re-announce them elsewhere); then the cleanup removes its
// records and the reaper the orphans.
func TestLapsedServiceOpensHoldForGrace(t *testing.T) {
	ctx := context.Background()
	clock := metatest.NewClock()
	store := memkv.New()
	opts := meta.Options{Now: clock.Now, After: clock.After, OrphanGrace: -1}
	svcs := sharedServices(t, store, opts, 2, false)
	a, b := svcs[0], svcs[1]
	f := mkfile(t, a, "f")
	sb, err := b.OpenSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	bb := b.WithSession(sb.ID)
	if _, err := bb.HoldOpen(ctx, f.Ino); err != nil {
		t.Fatal(err)
	}
	if _, err := bb.GetAttr(ctx, f.Ino); err != nil { // a lease record too
		t.Fatal(err)
	}
	if _, err := a.Unlink(ctx, meta.RootIno, "f", f.Ino); err != nil {
		t.Fatal(err)
	}
	for _, p := range []byte{'M', 'L', 'O', 'C'} {
		if !hasKeyOf(t, store, p, b.ID()) {
			t.Fatalf("no %q record of b", p)
		}
	}
	// b dies: it renews its liveness no more. With OrphanGrace -1 the
	// grace is 0, so its opens lapse with its liveness (a survivor with a
	// grace: TestOpenRestartGrace's logic, per Service).
	clock.Advance(meta.DefaultSessionTTL / 2)
	c, err := meta.New(store, meta.Options{Now: clock.Now, After: clock.After, OrphanGrace: -1, Shared: true})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := c.ReapOrphans(ctx); err != nil || n != 0 {
		t.Fatalf("reaper while b is live: %d reaped, %v; want none", n, err)
	}
	clock.Advance(meta.DefaultSessionTTL)
	c, err = meta.New(store, meta.Options{Now: clock.Now, After: clock.After, OrphanGrace: -1, Shared: true})
	if err != nil {
		t.Fatal(err)
	}
	n, err := c.CleanupDead(ctx)
	if err != nil || n < 2 { // a and b lapsed (a never renewed either), the first c not yet
		t.Fatalf("cleanup: %d cleaned, %v; want a and b", n, err)
	}
	for _, p := range []byte{'M', 'L', 'O', 'C'} {
		if hasKeyOf(t, store, p, b.ID()) {
			t.Fatalf("a %q record of b left after the cleanup", p)
		}
	}
	if n, err := c.ReapOrphans(ctx); err != nil || n != 1 {
		t.Fatalf("reaper after b lapsed: %d reaped, %v; want the orphan b held", n, err)
	}
}

// TestElectedOneAtATime: of several candidates, one runs the singleton
// work; when its leadership ends, its work stops and a new leader starts
// it again.
func TestElectedOneAtATime(t *testing.T) {
	store := newFeedStore()
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	running := map[string]bool{}
	started, stopped := make(chan string, 10), make(chan string, 10)
	var wg sync.WaitGroup
	for _, id := range []string{"m1", "m2", "m3"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			meta.Elected(ctx, store, "singletons", id, nil, func(ctx context.Context) {
				mu.Lock()
				running[id] = true
				mu.Unlock()
				started <- id
				<-ctx.Done()
				mu.Lock()
				delete(running, id)
				mu.Unlock()
				stopped <- id
			})
		}()
	}
	first := <-started
	mu.Lock()
	n := len(running)
	mu.Unlock()
	if n != 1 {
		t.Fatalf("%d candidates run the singleton work, want 1", n)
	}
	store.leader("singletons").end() // its store lease lapses
	if got := <-stopped; got != first {
		t.Fatalf("%s stopped, want the old leader %s", got, first)
	}
	<-started // a candidate (any: the old leader campaigns again too) leads again
	cancel()
	wg.Wait()
}

// TestSharedConformance runs the conformance suite on a Service of a
// shared store, with a second Service over the same store running: what a
// client sees through one Service is what it saw alone.
func TestSharedConformance(t *testing.T) {
	factory := func(t *testing.T, opts meta.Options) meta.API {
		return sharedServices(t, memkv.New(), opts, 2, true)[0]
	}
	metatest.Run(t, factory)
	t.Run("Model", func(t *testing.T) { metatest.RunModel(t, factory, 1, 300) })
}

// lonelyCalls is a memkv store that refuses every transaction writing
// only callback requests ("C" keys): a changer that dies right after its
// change committed never writes those.
type lonelyCalls struct{ *memkv.Store }

var errRefused = errors.New("test: a transaction of callback requests alone")

func (s lonelyCalls) Update(ctx context.Context, fn func(tx kv.Txn) error) error {
	return s.Store.Update(ctx, func(tx kv.Txn) error {
		rt := &watchTxn{Txn: tx}
		if err := fn(rt); err != nil {
			return err
		}
		if rt.writes > 0 && rt.writes == rt.calls {
			return errRefused
		}
		return nil
	})
}

// watchTxn counts a transaction's writes, and those of callback requests.
type watchTxn struct {
	kv.Txn
	writes, calls int
}

func (t *watchTxn) Put(k, v []byte) error {
	t.writes++
	if k[0] == 'C' {
		t.calls++
	}
	return t.Txn.Put(k, v)
}

// TestCallbackCommitsWithChange: a change writes its callback requests in
// its own transaction, so that a Service dying right after the commit has
// called the change back all the same.
func TestCallbackCommitsWithChange(t *testing.T) {
	ctx := context.Background()
	svcs := sharedServices(t, lonelyCalls{memkv.New()}, meta.Options{}, 2, true)
	a, b := svcs[0], svcs[1]
	f := mkfile(t, a, "f")
	sb, err := b.OpenSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	bb := b.WithSession(sb.ID)
	for _, change := range []func() error{
		func() error {
			_, err := a.Commit(ctx, meta.CommitReq{Ino: f.Ino, Size: 10, Changes: []meta.BlockChange{{Index: 0, New: block.Sum([]byte("one"))}}})
			return err
		},
		func() error {
			_, err := a.SetAttr(ctx, f.Ino, meta.SetAttrReq{Valid: meta.SetMode, Mode: 0o600})
			return err
		},
		func() error { return a.SetXattr(ctx, f.Ino, "user.k", []byte("v"), 0) },
		func() error { _, err := a.Link(ctx, f.Ino, meta.RootIno, "g"); return err },
	} {
		if _, err := bb.GetAttr(ctx, f.Ino); err != nil {
			t.Fatal(err)
		}
		if err := change(); err != nil {
			t.Fatal(err)
		}
		cb := awaitCallback(t, b, sb.ID, f.Ino)
		if _, err := b.Callbacks(ctx, sb.ID, cb.Seq, 0); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLeaseRecordsTidied: a Service drops its lease record of an inode
// none of its sessions holds a lease on any more, so that records do not
// pile up with every inode ever read; a new lease writes it again.
func TestLeaseRecordsTidied(t *testing.T) {
	ctx := context.Background()
	clock := metatest.NewClock()
	store := memkv.New()
	svcs := sharedServices(t, store, meta.Options{Now: clock.Now, After: clock.After}, 2, true)
	a, b := svcs[0], svcs[1]
	f := mkfile(t, a, "f")
	leaseRec := func() bool {
		found := false
		id := binary.BigEndian.AppendUint64(nil, uint64(b.ID()))
		key := append(binary.BigEndian.AppendUint64([]byte{'L'}, uint64(f.Ino)), id...)
		err := store.View(ctx, func(tx kv.Txn) error {
			_, ok, err := tx.Get(key)
			found = ok
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return found
	}
	sb, err := b.OpenSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.WithSession(sb.ID).GetAttr(ctx, f.Ino); err != nil {
		t.Fatal(err)
	}
	if !leaseRec() {
		t.Fatal("no lease record of b after its session read f")
	}
	// While the session holds its lease, the record stays.
	waitFor(t, "both Services wait on the clock", func() bool { return clock.Waiters() >= 2 })
	clock.Advance(meta.DefaultSessionTTL / 3)
	waitFor(t, "both Services wait again", func() bool { return clock.Waiters() >= 2 })
	if !leaseRec() {
		t.Fatal("b dropped the lease record of a lease its session holds")
	}
	if err := b.CloseSession(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	tidyUntil(t, clock, "b drops the record", func() bool { return !leaseRec() })

	sb, err = b.OpenSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.WithSession(sb.ID).GetAttr(ctx, f.Ino); err != nil {
		t.Fatal(err)
	}
	if !leaseRec() {
		t.Fatal("no lease record after a new lease")
	}
	if _, err := a.SetAttr(ctx, f.Ino, meta.SetAttrReq{Valid: meta.SetMode, Mode: 0o600}); err != nil {
		t.Fatal(err)
	}
	if cb := awaitCallback(t, b, sb.ID, f.Ino); cb.Kind != meta.CallbackInvalidate {
		t.Fatalf("callback %+v, want an invalidation", cb)
	}
}

// roundsStore records the store calls of a Service: each View's and
// Update's consistency, and whether the Update wrote.
type roundsStore struct {
	kv.Store
	mu    sync.Mutex
	calls []string
}

func (s *roundsStore) View(ctx context.Context, fn func(tx kv.Txn) error) error {
	s.note("view", ctx)
	return s.Store.View(ctx, fn)
}

func (s *roundsStore) Update(ctx context.Context, fn func(tx kv.Txn) error) error {
	s.note("update", ctx)
	return s.Store.Update(ctx, fn)
}

// Watch passes the change feed through (a shared store needs it).
func (s *roundsStore) Watch(ctx context.Context, prefix []byte, from int64) (<-chan []kv.Change, error) {
	return s.Store.(kv.Watcher).Watch(ctx, prefix, from)
}

func (s *roundsStore) note(kind string, ctx context.Context) {
	if kv.ConsistencyOf(ctx) == kv.Serializable {
		kind += "/serializable"
	}
	s.mu.Lock()
	s.calls = append(s.calls, kind)
	s.mu.Unlock()
}

func (s *roundsStore) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.calls
	s.calls = nil
	return out
}

// TestOpenRecordsAndReadsInOneTransaction: in a shared store, an open
// that writes its open record reads the inode in the same transaction
// (its snapshot may come from the nearest replica: the commit checks it),
// not in a quorum read after it; an open whose record is there already
// only reads, linearizable. An inode gone gets ENOENT and leaves no record.
func TestOpenRecordsAndReadsInOneTransaction(t *testing.T) {
	ctx := context.Background()
	store := &roundsStore{Store: memkv.New()}
	svcs := sharedServices(t, store, meta.Options{}, 2, false)
	a, b := svcs[0], svcs[1]
	f := mkfile(t, a, "f")
	sb, err := b.OpenSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	bb := b.WithSession(sb.ID)
	if _, err := bb.GetAttr(ctx, f.Ino); err != nil { // b's lease record
		t.Fatal(err)
	}
	for _, lag := range []bool{false, true} {
		octx := ctx
		if lag {
			octx = meta.AllowSerializable(ctx)
		}
		store.take()
		in, err := bb.HoldOpen(octx, f.Ino)
		if err != nil || in.Ino != f.Ino {
			t.Fatalf("lag %v: HoldOpen = %d, %v", lag, in.Ino, err)
		}
		if got := store.take(); len(got) != 1 || got[0] != "update/serializable" {
			t.Errorf("lag %v: first open made store calls %v, want one [update/serializable]", lag, got)
		}
		if !hasKeyOf(t, store, 'O', b.ID()) {
			t.Fatalf("lag %v: no open record of b after the open", lag)
		}
		store.take()
		if _, err := bb.HoldOpen(octx, f.Ino); err != nil {
			t.Fatal(err)
		}
		if got := store.take(); len(got) != 1 || got[0] != "view" {
			t.Errorf("lag %v: second open made store calls %v, want one linearizable [view]", lag, got)
		}
		for range 2 {
			if err := bb.ReleaseOpen(ctx, f.Ino); err != nil {
				t.Fatal(err)
			}
		}
		meta.FlushOpenDrops(b)
		if hasKeyOf(t, store, 'O', b.ID()) {
			t.Fatalf("lag %v: open record of b left after the last release", lag)
		}
	}
	if _, err := a.Unlink(ctx, meta.RootIno, "f", f.Ino); err != nil {
		t.Fatal(err)
	}
	if err := a.Reap(ctx, f.Ino); err != nil {
		t.Fatal(err)
	}
	if _, err := bb.HoldOpen(ctx, f.Ino); !errors.Is(err, meta.ErrNotFound) {
		t.Fatalf("open of a deleted inode: %v, want ENOENT", err)
	}
	if hasKeyOf(t, store, 'O', b.ID()) {
		t.Fatal("open record written for a deleted inode")
	}
}

// TestOpenOfOrphanChecksReapLinearizable: an open that finds the inode
// unlinked (an orphan held open) asks whether a reap has begun with a
// linearizable read, whatever lag the caller allows: a reap's first
// segment marks the inode without changing its record, so neither the
// open's transaction nor a lagging member would show the mark.
func TestOpenOfOrphanChecksReapLinearizable(t *testing.T) {
	ctx := context.Background()
	store := &roundsStore{Store: memkv.New()}
	svcs := sharedServices(t, store, meta.Options{}, 2, false)
	a, b := svcs[0], svcs[1]
	f := mkfile(t, a, "f")
	sb, err := b.OpenSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	bb := b.WithSession(sb.ID)
	if _, err := bb.HoldOpen(ctx, f.Ino); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Unlink(ctx, meta.RootIno, "f", f.Ino); err != nil {
		t.Fatal(err)
	}
	store.take()
	in, err := bb.HoldOpen(meta.AllowSerializable(ctx), f.Ino)
	if err != nil || in.Nlink != 0 {
		t.Fatalf("open of the held orphan: nlink %d, %v; want it open with nlink 0", in.Nlink, err)
	}
	calls := store.take()
	for _, c := range calls {
		if c == "view/serializable" {
			t.Fatalf("open of an orphan made store calls %v: a serializable view may miss a reap under way", calls)
		}
	}
}
