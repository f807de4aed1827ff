package client

import (
	"context"
	"errors"
	"log/slog"
	"math/rand"
	"net/http/httptest"
	"testing"
	"time"

	"tessera/internal/block"
	blockclient "tessera/internal/block/client"
	"tessera/internal/block/disk"
	blockserver "tessera/internal/block/server"
	"tessera/internal/kv/memkv"
	"tessera/internal/meta"
)

// TestBlockServerDown reads a file whose block server has stopped: the read
// fails with ErrUnavailable within a bounded time, never hangs.
func TestBlockServerDown(t *testing.T) {
	ctx := context.Background()
	svc, err := meta.New(memkv.New(), meta.Options{BlockSize: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	st, err := disk.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	srv := httptest.NewServer(blockserver.New(st, blockserver.Options{}))
	defer srv.Close()
	svc.RegisterServer(ctx, meta.Server{ID: "b0", Addr: srv.Listener.Addr().String(), State: "up"})
	dial := func(s meta.Server) (block.Store, error) { return blockclient.New(s.Addr, blockclient.Options{}), nil }
	write, err := New(ctx, Config{Meta: svc, Dial: dial, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	in, err := svc.Create(ctx, meta.CreateReq{Parent: meta.RootIno, Name: "f", Mode: 0o100644})
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 200<<10)
	rand.New(rand.NewSource(2)).Read(data)
	h, _, _ := write.Open(ctx, in, 0)
	h.Write(ctx, 0, data)
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
	write.Close(ctx)

	srv.Close() // the only block server goes away

	read, err := New(ctx, Config{Meta: svc, Dial: dial, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer read.Close(ctx)
	cur, _ := svc.GetAttr(ctx, in.Ino)
	rh, _, _ := read.Open(ctx, cur, 0)
	defer rh.Release(ctx)
	// ErrUnavailable is the block client giving up after its tries and
	// budget (bounded on its clock: internal/block/client's tests); how
	// long that takes on the wall clock depends on the machine.
	start := time.Now()
	_, err = rh.Read(ctx, 0, make([]byte, 4096))
	if !errors.Is(err, block.ErrUnavailable) {
		t.Fatalf("read with the block server down: %v; want ErrUnavailable", err)
	}
	t.Logf("failed after %v: %v", time.Since(start), err)

	// A write whose upload cannot reach a server fails at fsync, not before,
	// and not with a hang.
	wh, _, _ := read.Open(ctx, cur, 0)
	defer wh.Release(ctx)
	wh.Write(ctx, 0, make([]byte, 64<<10))
	wh.Write(ctx, 0, []byte{1})
	if err := wh.Flush(ctx); err == nil {
		t.Fatal("fsync succeeded with no block server reachable")
	}
}
