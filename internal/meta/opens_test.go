package meta_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"tessera/internal/kv"
	"tessera/internal/kv/memkv"
	"tessera/internal/meta"
	"tessera/internal/meta/metatest"
)

// engines open a store at dir, and again after a "restart" (close and
// reopen; memkv keeps the same store, as a process would keep a disk).
var reopenable = []struct {
	name string
	open func(t *testing.T, dir string) (kv.Store, func())
}{
	{"memkv", func(t *testing.T, dir string) (kv.Store, func()) {
		return sharedMem(dir), func() {}
	}},
	{"bolt", func(t *testing.T, dir string) (kv.Store, func()) {
		s := openBolt(t, filepath.Join(dir, "meta.db"))
		return s, func() { s.Close() }
	}},
	{"pebble", func(t *testing.T, dir string) (kv.Store, func()) {
		s := openPebble(t, filepath.Join(dir, "meta"))
		return s, func() { s.Close() }
	}},
}

var mems = map[string]*memkv.Store{}

func sharedMem(dir string) *memkv.Store {
	if mems[dir] == nil {
		mems[dir] = memkv.New()
	}
	return mems[dir]
}

// TestOpenRestartGrace: a service started on a store that served sessions
// deletes no orphan during its grace (twice the session TTL), so the
// clients of its previous life can re-announce what they hold open; then
// it reaps the orphans no one re-announced and keeps the others until
// their release.
func TestOpenRestartGrace(t *testing.T) {
	for _, e := range reopenable {
		t.Run(e.name, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			clock := metatest.NewClock()
			opts := meta.Options{Now: clock.Now, After: clock.After}
			store, closeStore := e.open(t, dir)
			s1, err := meta.New(store, opts)
			if err != nil {
				t.Fatal(err)
			}
			if s1.InGrace() {
				t.Fatal("a service on a new store is in its restart grace")
			}
			info, err := s1.OpenSession(ctx)
			if err != nil {
				t.Fatal(err)
			}
			a := s1.WithSession(info.ID)
			mk := func(s *meta.Service, name string) meta.Inode {
				in, err := s.Create(ctx, meta.CreateReq{Parent: meta.RootIno, Name: name, Mode: syscall.S_IFREG | 0o644, Excl: true})
				if err != nil {
					t.Fatal(err)
				}
				return in
			}
			held, dropped := mk(s1, "held"), mk(s1, "dropped")
			for _, in := range []meta.Inode{held, dropped} {
				if _, err := a.HoldOpen(ctx, in.Ino); err != nil {
					t.Fatal(err)
				}
				if _, err := s1.Unlink(ctx, meta.RootIno, map[meta.Ino]string{held.Ino: "held", dropped.Ino: "dropped"}[in.Ino], in.Ino); err != nil {
					t.Fatal(err)
				}
			}

			// The restart: the sessions are gone with the process.
			closeStore()
			store, closeStore = e.open(t, dir)
			defer closeStore()
			s2, err := meta.New(store, opts)
			if err != nil {
				t.Fatal(err)
			}
			if !s2.InGrace() {
				t.Fatal("a restarted service is not in its grace")
			}
			exists := func(what string, ino meta.Ino, want bool) {
				t.Helper()
				_, err := s2.GetAttr(ctx, ino)
				if got := err == nil; got != want || (err != nil && !errors.Is(err, meta.ErrNotFound)) {
					t.Fatalf("%s: getattr %d: %v, want exists=%v", what, ino, err, want)
				}
			}
			if n, err := s2.ReapOrphans(ctx); err != nil || n != 0 {
				t.Fatalf("reap in the grace: %d reaped, %v; want none", n, err)
			}
			if err := s2.Reap(ctx, dropped.Ino); err != nil {
				t.Fatal(err)
			}
			exists("an orphan reaped in the grace", dropped.Ino, true)
			// An unlink in the grace orphans, whatever the caller says:
			// a client not yet back may hold the file open.
			late := mk(s2, "late")
			if _, err := s2.Unlink(ctx, meta.RootIno, "late", late.Ino); err != nil {
				t.Fatal(err)
			}
			exists("unlinked in the grace", late.Ino, true)

			// The holder comes back and re-announces one of the two.
			info, err = s2.OpenSession(ctx)
			if err != nil {
				t.Fatal(err)
			}
			b := s2.WithSession(info.ID)
			if _, err := b.HoldOpen(ctx, held.Ino); err != nil {
				t.Fatalf("re-announce: %v", err)
			}
			for range 2 { // the client keeps polling
				clock.Advance(meta.DefaultSessionTTL - time.Second)
				if _, err := s2.Callbacks(ctx, info.ID, 0, 0); err != nil {
					t.Fatal(err)
				}
			}
			clock.Advance(3 * time.Second)
			if s2.InGrace() {
				t.Fatal("still in the grace after twice the session TTL")
			}
			n, err := s2.ReapOrphans(ctx)
			if err != nil || n != 2 {
				t.Fatalf("reap after the grace: %d reaped, %v; want the two nobody holds", n, err)
			}
			exists("not re-announced", dropped.Ino, false)
			exists("unlinked in the grace, not held", late.Ino, false)
			exists("re-announced", held.Ino, true)
			if err := b.ReleaseOpen(ctx, held.Ino); err != nil {
				t.Fatal(err)
			}
			exists("released", held.Ino, false)
		})
	}
}

// TestOpenGraceOption: OrphanGrace sets the grace; negative turns it off.
func TestOpenGraceOption(t *testing.T) {
	ctx := context.Background()
	store := memkv.New()
	clock := metatest.NewClock()
	s, err := meta.New(store, meta.Options{Now: clock.Now, After: clock.After})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.OpenSession(ctx); err != nil {
		t.Fatal(err)
	}
	s2, err := meta.New(store, meta.Options{Now: clock.Now, After: clock.After, OrphanGrace: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(59 * time.Second)
	if !s2.InGrace() {
		t.Fatal("OrphanGrace 1m: out of the grace after 59 s")
	}
	s3, err := meta.New(store, meta.Options{Now: clock.Now, After: clock.After, OrphanGrace: -1})
	if err != nil {
		t.Fatal(err)
	}
	if s3.InGrace() {
		t.Fatal("OrphanGrace negative: in a grace")
	}
}

// armedStore is a memkv store that runs a hook (once) at the start of
// its next read-only transaction (onView) or read-write one (onUpdate)
// after the hook is armed: a test's way in between a method's record
// check and its transaction.
type armedStore struct {
	*memkv.Store
	onView, onUpdate atomic.Pointer[func()]
}

func (s *armedStore) View(ctx context.Context, fn func(tx kv.Txn) error) error {
	if h := s.onView.Swap(nil); h != nil {
		(*h)()
	}
	return s.Store.View(ctx, fn)
}

func (s *armedStore) Update(ctx context.Context, fn func(tx kv.Txn) error) error {
	if h := s.onUpdate.Swap(nil); h != nil {
		(*h)()
	}
	return s.Store.Update(ctx, fn)
}

// TestReapWaitsForAReapUnderWay: Reap of an orphan another reap is
// deleting (the background tidying's, or another caller's) waits for it
// and does not report success before the orphan is gone. (It used to
// return at once: the shared conformance suite found an orphan still there
// after Reap when ServeShared's tidying reaped it at the same moment.)
func TestReapWaitsForAReapUnderWay(t *testing.T) {
	ctx := context.Background()
	store := &armedStore{Store: memkv.New()}
	s, err := meta.New(store, meta.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f := mkfile(t, s, "f")
	if _, err := s.Unlink(ctx, meta.RootIno, "f", 0); err != nil { // held by its caller: an orphan
		t.Fatal(err)
	}
	// Inside the first reap's transaction, a second Reap whose caller
	// gives up at once must say it did not see the orphan gone.
	var during error
	hook := func() {
		gone, cancel := context.WithCancel(ctx)
		cancel()
		during = s.Reap(gone, f.Ino)
	}
	store.onUpdate.Store(&hook)
	if err := s.Reap(ctx, f.Ino); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(during, context.Canceled) {
		t.Fatalf("Reap while another reap was under way = %v, want it to wait (and fail when its context ends)", during)
	}
	if _, err := s.GetAttr(ctx, f.Ino); !errors.Is(err, meta.ErrNotFound) {
		t.Fatalf("after the reap: getattr = %v, want not found", err)
	}
}
