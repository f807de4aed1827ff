package client

import (
	"context"
	"log/slog"
	"sync/atomic"
	"syscall"
	"testing"

	"tessera/internal/block"
	"tessera/internal/kv"
	"tessera/internal/kv/memkv"
	"tessera/internal/meta"
)

// syncingStore is a kv.Store that defers durability (kv.Syncer) and counts
// the Syncs asked of it.
type syncingStore struct {
	kv.Store
	syncs atomic.Int64
}

func (s *syncingStore) Sync(ctx context.Context) error {
	s.syncs.Add(1)
	return nil
}

// TestFsyncSyncsMeta: a close commits without asking the meta store for
// durability; fsync(2), an O_SYNC write and fsync of a file with nothing to
// commit each do (docs/design/2026-11-23-small-files.md).
func TestFsyncSyncsMeta(t *testing.T) {
	ctx := context.Background()
	kvs := &syncingStore{Store: memkv.New()}
	svc, err := meta.New(kvs, meta.Options{BlockSize: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.RegisterServer(ctx, meta.Server{ID: "b0", Addr: "mem", State: "up"}); err != nil {
		t.Fatal(err)
	}
	st := &memStore{blocks: make(map[block.Hash][]byte)}
	c, err := New(ctx, Config{Meta: svc, Dial: func(meta.Server) (block.Store, error) { return st, nil },
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)

	step := func(what string, want int64, fn func() error) {
		t.Helper()
		before := kvs.syncs.Load()
		if err := fn(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if got := kvs.syncs.Load() - before; got != want {
			t.Fatalf("%s: %d meta syncs; want %d", what, got, want)
		}
	}
	in := createFile(t, svc, "f")
	h, _, err := c.Open(ctx, in, syscall.O_WRONLY)
	if err != nil {
		t.Fatal(err)
	}
	step("write", 0, func() error { _, err := h.Write(ctx, 0, []byte("hello")); return err })
	step("close", 0, func() error { return h.Flush(ctx) })
	step("fsync with nothing to commit", 1, func() error { return h.Fsync(ctx) })
	step("write", 0, func() error { _, err := h.Write(ctx, 5, []byte(" world")); return err })
	step("fsync", 1, func() error { return h.Fsync(ctx) })
	step("release", 0, func() error { return h.Release(ctx) })

	hs, _, err := c.Open(ctx, in, syscall.O_WRONLY|syscall.O_SYNC)
	if err != nil {
		t.Fatal(err)
	}
	defer hs.Release(ctx)
	step("O_SYNC write", 1, func() error { _, err := hs.Write(ctx, 0, []byte("H")); return err })
	step("Client.Sync", 1, func() error { return c.Sync(ctx) })
}
