package client

import (
	"bytes"
	"context"
	"log/slog"
	"testing"
	"time"

	"tessera/internal/block"
	"tessera/internal/kv/memkv"
	"tessera/internal/meta"
	"tessera/internal/meta/metatest"
)

// sessionEnv is several clients with sessions over one Service and one
// block store.
type sessionEnv struct {
	svc   *meta.Service
	clock *metatest.Clock
	store *memStore
}

func newSessionEnv(t *testing.T, blockSize uint32) *sessionEnv {
	t.Helper()
	clock := metatest.NewClock()
	svc, err := meta.New(memkv.New(), meta.Options{BlockSize: blockSize, Now: clock.Now, After: clock.After})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.RegisterServer(context.Background(), meta.Server{ID: "b0", Addr: "mem", State: "up"}); err != nil {
		t.Fatal(err)
	}
	return &sessionEnv{svc: svc, clock: clock, store: &memStore{blocks: make(map[block.Hash][]byte)}}
}

// client starts a client with a session whose OnInvalidate feeds the
// returned channel.
func (e *sessionEnv) client(t *testing.T) (*Client, chan meta.Ino) {
	t.Helper()
	inval := make(chan meta.Ino, 100)
	c, err := New(context.Background(), Config{
		Meta:          e.svc,
		Dial:          func(meta.Server) (block.Store, error) { return e.store, nil },
		Logger:        slog.New(slog.DiscardHandler),
		MemCacheBytes: 1 << 20,
		Sessions:      true,
		SyncCommits:   true,
		OnInvalidate:  func(ino meta.Ino) { inval <- ino },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	if c.Session() == 0 {
		t.Fatal("no session opened")
	}
	return c, inval
}

func writeAt(t *testing.T, c *Client, ino meta.Ino, off int64, data []byte) {
	t.Helper()
	ctx := context.Background()
	h, _, _, err := c.OpenIno(ctx, ino, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Write(ctx, off, data); err != nil {
		t.Fatal(err)
	}
	if err := h.Release(ctx); err != nil { // a Sync commit
		t.Fatal(err)
	}
}

func readAt(t *testing.T, h *Handle, n int) []byte {
	t.Helper()
	buf := make([]byte, n)
	m, err := h.Read(context.Background(), 0, buf)
	if err != nil {
		t.Fatal(err)
	}
	return buf[:m]
}

// wantTold waits for OnInvalidate(ino).
func wantTold(t *testing.T, ch chan meta.Ino, ino meta.Ino) {
	t.Helper()
	select {
	case got := <-ch:
		if got != ino {
			t.Fatalf("OnInvalidate(%d), want %d", got, ino)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("OnInvalidate(%d) was not called", ino)
	}
}

// TestCallbacksKeepReadersCoherent: client B has a file open and read; A
// commits changes; B's cached recipe and size are invalidated (one other
// holder or two) before A's Sync commit returns, and B's next read through
// the same handle returns A's bytes. (Updates, sent for changes that are not
// Sync, are covered by the meta conformance suite.)
func TestCallbacksKeepReadersCoherent(t *testing.T) {
	const bs = 16 << 10
	e := newSessionEnv(t, bs)
	a, _ := e.client(t)
	b, bTold := e.client(t)
	ctx := context.Background()
	f := createFile(t, a.Meta(), "f")
	v1 := bytes.Repeat([]byte("1"), 2*bs)
	writeAt(t, a, f.Ino, 0, v1)

	hb, _, _, err := b.OpenIno(ctx, f.Ino, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer hb.Release(ctx)
	if got := readAt(t, hb, 4*bs); !bytes.Equal(got, v1) {
		t.Fatalf("B read %q..., want v1", got[:8])
	}

	// One other holder: a Sync commit invalidates it before the change is
	// made (an update could only carry the change after it was visible).
	v2 := bytes.Repeat([]byte("2"), bs+100)
	writeAt(t, a, f.Ino, bs, v2)
	fb := hb.f
	fb.mu.Lock()
	fb.cbq.Lock()
	stale := fb.stale || len(fb.cbq.q) > 0
	fb.cbq.Unlock()
	fb.mu.Unlock()
	if !stale {
		t.Fatal("B's file is not invalidated after A's Sync commit returned")
	}
	want := append(append([]byte{}, v1[:bs]...), v2...)
	if got := readAt(t, hb, 4*bs); !bytes.Equal(got, want) {
		t.Fatalf("B read %d bytes after the update, want A's %d", len(got), len(want))
	}
	wantTold(t, bTold, f.Ino)

	// Two other holders: invalidations.
	c, cTold := e.client(t)
	hc, _, _, err := c.OpenIno(ctx, f.Ino, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer hc.Release(ctx)
	readAt(t, hc, 4*bs)
	v3 := bytes.Repeat([]byte("3"), 10)
	writeAt(t, a, f.Ino, 5, v3)
	fb.mu.Lock()
	stale = fb.stale
	fb.mu.Unlock()
	if !stale {
		t.Fatal("B's file is not invalidated after A's commit returned")
	}
	copy(want[5:], v3)
	for name, h := range map[string]*Handle{"B": hb, "C": hc} {
		if got := readAt(t, h, 4*bs); !bytes.Equal(got, want) {
			t.Fatalf("%s read stale bytes after the invalidation", name)
		}
	}
	wantTold(t, bTold, f.Ino)
	wantTold(t, cTold, f.Ino)
	if n := b.Stats().Callbacks; n != 2 {
		t.Fatalf("B counted %d callbacks, want 2", n)
	}
	// The kernel may not keep B's pages: the content changed since B saw it.
	in, err := e.svc.GetAttr(ctx, f.Ino)
	if err != nil {
		t.Fatal(err)
	}
	if _, m, _ := b.Open(ctx, in, 0); m.KeepCache {
		t.Fatal("B would keep the kernel cache of a changed file")
	}
}

// TestCallbacksSessionExpired: when the meta service forgets the session,
// the client drops its caches, tells the FUSE layer, opens a new session
// and goes on being called back.
func TestCallbacksSessionExpired(t *testing.T) {
	const bs = 16 << 10
	e := newSessionEnv(t, bs)
	a, _ := e.client(t)
	b, bTold := e.client(t)
	ctx := context.Background()
	f := createFile(t, a.Meta(), "f")
	writeAt(t, a, f.Ino, 0, []byte("one"))
	hb, _, _, err := b.OpenIno(ctx, f.Ino, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer hb.Release(ctx)
	readAt(t, hb, 10)

	old := b.Session()
	if err := e.svc.CloseSession(ctx, old); err != nil { // as a restart would
		t.Fatal(err)
	}
	wantTold(t, bTold, f.Ino)
	if s := b.Session(); s == old || s == 0 {
		t.Fatalf("session %x after expiry of %x, want a new one", s, old)
	}
	// The stale size and recipe are read again; the new session's lease
	// brings the next change.
	writeAt(t, a, f.Ino, 0, []byte("two!"))
	if got := readAt(t, hb, 10); string(got) != "two!" {
		t.Fatalf("B read %q, want %q", got, "two!")
	}
}
