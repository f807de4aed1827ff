package client

import (
	"bytes"
	"context"
	"log/slog"
	"math/rand"
	"testing"

	"tessera/internal/block"
	"tessera/internal/kv/memkv"
	"tessera/internal/meta"
)

// partsEnv is newEnv with the meta service's transaction bound set.
func partsEnv(t *testing.T, blockSize uint32, maxTxnOps int) *env {
	t.Helper()
	ctx := context.Background()
	svc, err := meta.New(memkv.New(), meta.Options{BlockSize: blockSize, MaxTxnOps: maxTxnOps})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.RegisterServer(ctx, meta.Server{ID: "b0", Addr: "mem", State: "up"}); err != nil {
		t.Fatal(err)
	}
	st := &memStore{blocks: make(map[block.Hash][]byte)}
	c, err := New(ctx, Config{Meta: svc, Dial: func(meta.Server) (block.Store, error) { return st, nil },
		Logger: slog.New(slog.DiscardHandler), MemCacheBytes: int64(blockSize) * 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return &env{api: svc, store: st, c: c}
}

// writeParts writes data to a new file name through one handle, closes
// it (one commit of every block) and checks it reads back.
func (e *env) writeParts(t *testing.T, name string, data []byte) meta.Inode {
	t.Helper()
	ctx := context.Background()
	in := e.create(t, name)
	h, _, _ := e.c.Open(ctx, in, 0)
	if _, err := h.Write(ctx, 0, data); err != nil {
		t.Fatal(err)
	}
	if err := h.Release(ctx); err != nil {
		t.Fatalf("close after writing %d bytes: %v", len(data), err)
	}
	if got := e.readAll(t, in.Ino); !bytes.Equal(got, data) {
		t.Fatalf("read back %d bytes, differ from the %d written", len(got), len(data))
	}
	return in
}

// TestCommitInParts: a file whose close commits more blocks than one
// Commit takes (meta.MaxCommitBlocks), or than the meta service's
// transaction bound allows, is committed in parts and reads back whole;
// a truncate of it cuts it in segments. Without the parts the commit
// failed with ErrTooBig.
func TestCommitInParts(t *testing.T) {
	const bs = 4096
	rnd := rand.New(rand.NewSource(3))
	e := partsEnv(t, bs, 0)
	data := make([]byte, (meta.MaxCommitBlocks+200)*bs+17)
	rnd.Read(data)
	e.writeParts(t, "big", data)

	small := partsEnv(t, bs, meta.MinTxnOps)
	data = make([]byte, 300*bs)
	rnd.Read(data)
	in := small.writeParts(t, "f", data)
	ctx := context.Background()
	in, err := small.api.GetAttr(ctx, in.Ino)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := small.c.Truncate(ctx, in, 2*bs+5); err != nil {
		t.Fatalf("truncate: %v", err)
	}
	if got := small.readAll(t, in.Ino); !bytes.Equal(got, data[:2*bs+5]) {
		t.Fatalf("after the truncate: %d bytes, want the first %d", len(got), 2*bs+5)
	}
	if bad, err := small.api.CheckRefs(ctx); err != nil || len(bad) != 0 {
		t.Fatalf("reference counts: %v %+v", err, bad)
	}
}
