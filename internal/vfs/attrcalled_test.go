package vfs

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"tessera/internal/block"
	"tessera/internal/block/blocktest"
	"tessera/internal/client"
	"tessera/internal/clock"
	"tessera/internal/meta"
)

// countingMeta is a meta service whose session-bound APIs count GetAttr
// calls.
type countingMeta struct {
	*meta.Service
	getattrs atomic.Int64
}

func (m *countingMeta) WithSession(id meta.SessionID) meta.API {
	return countingAPI{API: m.Service.WithSession(id), n: &m.getattrs}
}

type countingAPI struct {
	meta.API
	n *atomic.Int64
}

func (a countingAPI) GetAttr(ctx context.Context, ino meta.Ino) (meta.Inode, error) {
	a.n.Add(1)
	return a.API.GetAttr(ctx, ino)
}

// sessionFS is a vfs with the attribute cache over a client with a meta
// session on m, the cache dropping what the client is called back for
// (client.Config.OnCallback), as up.StartNFS wires it; its clock stands
// still, so nothing it keeps expires.
func sessionFS(t *testing.T, m *countingMeta) *FS {
	t.Helper()
	st := blocktest.NewMem()
	called := new(Invalidations)
	c, err := client.New(context.Background(), client.Config{
		Meta:       m,
		Dial:       func(meta.Server) (block.Store, error) { return st, nil },
		Logger:     slog.New(slog.DiscardHandler),
		Sessions:   true,
		OnCallback: called.Invalidate,
	})
	if err != nil {
		t.Fatal(err)
	}
	v := New(c, Options{AttrCache: true, Clock: clock.NewFake(time.Unix(1_000_000, 0)), Logger: slog.New(slog.DiscardHandler)})
	called.Subscribe(v.Invalidate)
	t.Cleanup(func() {
		v.Close()
		c.Close(context.Background())
	})
	return v
}

// TestAttrCacheOfFilesNotOpenIsCalledBack: two front ends (two NFS servers)
// over one cluster. The attributes of a regular file that B looked up but
// does not have open are answered from B's cache (no meta call) while the
// session lease they were read under holds, and a change made through A
// (a chmod, then the unlink) reaches B's answers through the meta
// service's callback, not through the TTL, which never runs out here.
func TestAttrCacheOfFilesNotOpenIsCalledBack(t *testing.T) {
	ctx := context.Background()
	m := &countingMeta{Service: newMetaSvc(t)}
	a, b := sessionFS(t, m), sessionFS(t, m)

	f := mk(t, a, alice, meta.RootIno, "f", syscall.S_IFREG|0o644)
	if _, err := b.Lookup(ctx, alice, meta.RootIno, "f"); err != nil {
		t.Fatal(err)
	}
	before := m.getattrs.Load()
	for range 3 {
		in, err := b.GetAttrCached(ctx, f.Ino)
		if err != nil || in.Mode&^syscall.S_IFMT != 0o644 {
			t.Fatalf("B's GetAttrCached: %o, %v; want 0644", in.Mode, err)
		}
	}
	if n := m.getattrs.Load() - before; n != 0 {
		t.Errorf("B asked the meta service %d times for a file it looked up (leased): want 0, answered from its cache", n)
	}

	// until waits for B's answer to satisfy ok: the callback travels
	// through B's poll of its session, after A's call returned.
	until := func(what string, ok func(meta.Inode, error) bool) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			in, err := b.GetAttrCached(ctx, f.Ino)
			if ok(in, err) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: B still answers %o, %v (not called back?)", what, in.Mode, err)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	if _, err := a.SetAttr(ctx, alice, f.Ino, SetAttr{Valid: meta.SetMode, Mode: 0o600}); err != nil {
		t.Fatal(err)
	}
	until("after A's chmod", func(in meta.Inode, err error) bool { return err == nil && in.Mode&^syscall.S_IFMT == 0o600 })
	if _, err := b.GetAttrCached(ctx, f.Ino); err != nil { // kept again, leased again
		t.Fatal(err)
	}
	if err := a.Unlink(ctx, alice, meta.RootIno, "f"); err != nil {
		t.Fatal(err)
	}
	until("after A's unlink", func(_ meta.Inode, err error) bool {
		return errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ESTALE)
	})
}
