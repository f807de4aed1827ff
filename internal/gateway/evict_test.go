package gateway_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"tessera/internal/block"
	"tessera/internal/block/disk"
	"tessera/internal/client"
	"tessera/internal/gateway"
	"tessera/internal/kv/memkv"
	"tessera/internal/meta"
)

// TestEvictTree: eviction drops the data of the files read from home
// (they become placeholders of home's size, read as holes, and are
// fetched again), keeps and reports a file with queued write-back, passes
// over a file made in the cache; the cache usage figures follow.
func TestEvictTree(t *testing.T) {
	ctx := context.Background()
	e, _, inos := vanishEnv(t, meta.ModeIW, "a", "b")
	big := randBytes(300<<10, 5) // several 64 KiB blocks
	e.put(t, "big", big)
	if _, err := e.g.ListDir(ctx, e.root); err != nil {
		t.Fatal(err)
	}
	in, err := e.svc.Lookup(ctx, e.root, "big")
	if err != nil {
		t.Fatal(err)
	}
	inos["big"] = in.Ino
	if _, err := e.g.Fetch(ctx, in.Ino, 0, 1<<20); err != nil {
		t.Fatal(err)
	}
	// A local change of b (queued) and a file made in the cache.
	if _, err := e.svc.SetAttr(ctx, inos["b"], meta.SetAttrReq{Valid: meta.SetMode, Mode: 0o600}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Create(ctx, meta.CreateReq{Parent: e.root, Name: "n", Mode: syscall.S_IFREG | 0o644, Excl: true}); err != nil {
		t.Fatal(err)
	}
	u, err := gateway.CachedBytes(ctx, e.svc, e.root, 0)
	want := int64(len(big) + len("home's a") + len("home's b") + len("home's d/y")) // n is empty
	if err != nil || u.Files != 5 || u.Bytes != want || u.Placeholders != 0 || u.Truncated {
		t.Errorf("usage before: %+v, %v; want 5 files, %d bytes", u, err, want)
	}
	if u, _ := gateway.CachedBytes(ctx, e.svc, e.root, 2); !u.Truncated {
		t.Errorf("usage with a limit of 2 entries: %+v, want truncated", u)
	}

	var last, total int
	res, err := gateway.EvictTree(ctx, e.svc, e.root, func(d, n int) { last, total = d, n })
	if err != nil {
		t.Fatal(err)
	}
	if res.Files != 3 || res.Bytes != int64(len(big)+len("home's a")+len("home's d/y")) || len(res.Dirty) != 1 || !strings.HasPrefix(res.Dirty[0], "b: ") {
		t.Errorf("evict: %+v; want a, big and d/y evicted, b kept", res)
	}
	if last != 4 || total != 4 {
		t.Errorf("progress ended at %d of %d, want 4 of 4", last, total)
	}
	for _, n := range []string{"a", "big", "d/y"} {
		in, err := e.svc.GetAttr(ctx, inos[n])
		if err != nil || in.Gateway.State != meta.CachePlaceholder {
			t.Fatalf("%s after eviction: %+v, %v", n, in.Gateway, err)
		}
	}
	if got := e.read(t, inos["big"]); len(got) != len(big) || !bytes.Equal(got, make([]byte, len(big))) {
		t.Errorf("big after eviction reads %d bytes, not a hole of %d", len(got), len(big))
	}
	if got := e.read(t, inos["b"]); string(got) != "home's b" {
		t.Errorf("b (kept) reads %q", got)
	}
	if _, err := e.g.Fetch(ctx, inos["big"], 0, 1<<20); err != nil {
		t.Fatal(err)
	}
	if got := e.read(t, inos["big"]); !bytes.Equal(got, big) {
		t.Errorf("big fetched again differs")
	}
	u, err = gateway.CachedBytes(ctx, e.svc, e.root, 0)
	if err != nil || u.Files != 3 || u.Placeholders != 2 || u.Bytes != int64(len(big)+len("home's b")) {
		t.Errorf("usage after: %+v, %v; want big, b and n held, a and d/y placeholders", u, err)
	}
}

// TestEvictSegmented: a file of more blocks than one transaction may drop
// (MaxTxnOps at its least) is evicted in segments: a placeholder after,
// read as a hole, and fetched again whole.
func TestEvictSegmented(t *testing.T) {
	ctx := context.Background()
	svc, err := meta.New(memkv.New(), meta.Options{BlockSize: 64 << 10, MaxTxnOps: meta.MinTxnOps})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.RegisterServer(ctx, meta.Server{ID: "b0", Addr: "disk", State: meta.StateUp}); err != nil {
		t.Fatal(err)
	}
	st, err := disk.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(ctx, client.Config{Meta: svc, Dial: func(meta.Server) (block.Store, error) { return st, nil },
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	home := t.TempDir()
	big := randBytes(200<<16+123, 9) // 201 blocks of 64 KiB
	if err := os.WriteFile(filepath.Join(home, "big"), big, 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := svc.Create(ctx, meta.CreateReq{Parent: meta.RootIno, Name: "cache", Mode: syscall.S_IFDIR | 0o755, Excl: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.CreateFileset(ctx, meta.Fileset{Root: d.Ino, Home: "file://" + home, Mode: meta.ModeRO, ValidityLag: time.Minute}); err != nil {
		t.Fatal(err)
	}
	g := gateway.NewIngester(svc, c, gateway.Options{Chunk: 1 << 20})
	t.Cleanup(func() { g.Close() })
	e := &env{svc: svc, data: c, home: home, root: d.Ino, g: g}
	if _, err := g.ListDir(ctx, d.Ino); err != nil {
		t.Fatal(err)
	}
	in, err := svc.Lookup(ctx, d.Ino, "big")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Fetch(ctx, in.Ino, 0, int64(len(big))); err != nil {
		t.Fatal(err)
	}
	if got := e.read(t, in.Ino); !bytes.Equal(got, big) {
		t.Fatal("big does not read as home's before eviction")
	}
	out, err := svc.EvictData(ctx, in.Ino)
	if err != nil {
		t.Fatal(err)
	}
	if out.Gateway.State != meta.CachePlaceholder || out.Size != uint64(len(big)) {
		t.Errorf("after eviction: state %v size %d", out.Gateway.State, out.Size)
	}
	if got := e.read(t, in.Ino); !bytes.Equal(got, make([]byte, len(big))) {
		t.Error("big after eviction is not a hole")
	}
	if _, err := g.Fetch(ctx, in.Ino, 0, int64(len(big))); err != nil {
		t.Fatal(err)
	}
	if got := e.read(t, in.Ino); !bytes.Equal(got, big) {
		t.Error("big fetched again differs from home's")
	}
}
