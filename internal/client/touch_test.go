package client

import (
	"context"
	"errors"
	"math/rand"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"tessera/internal/admin"
	"tessera/internal/block"
	"tessera/internal/block/disk"
	"tessera/internal/clock"
	"tessera/internal/kv/memkv"
	"tessera/internal/meta"
)

// touchEnv is a meta service with 64 KiB blocks and two disk block
// servers, a client on a fake clock that touches every upload older than
// an hour before its commit, and the cluster view the collector uses.
// Uploads age only when a test moves the clock: a 1 ms real age raced the
// uploads' completion (a commit within 1 ms of them touched nothing).
func touchEnv(t *testing.T) (*meta.Service, *Client, *clock.Fake, map[string]*disk.Store, *admin.Cluster) {
	t.Helper()
	ctx := context.Background()
	svc, err := meta.New(memkv.New(), meta.Options{BlockSize: 64 << 10, Replicas: 1})
	if err != nil {
		t.Fatal(err)
	}
	stores := map[string]*disk.Store{}
	for _, id := range []string{"b0", "b1"} {
		st, err := disk.Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		stores[id] = st
		if _, err := svc.RegisterServer(ctx, meta.Server{ID: id, Addr: id, Host: "h" + id, State: meta.StateUp}); err != nil {
			t.Fatal(err)
		}
	}
	clk := clock.NewFake(time.Now())
	c := testClient(t, svc, stores, Config{TouchAfter: time.Hour, Clock: clk})
	cl := &admin.Cluster{Meta: svc, Dial: func(s meta.Server) (admin.BlockServer, error) { return stores[s.ID], nil }}
	return svc, c, clk, stores, cl
}

// writeUploaded writes n whole blocks to a new file and waits until they
// are uploaded, not committed; then it ages them by two hours: on the
// client's clock and in the block files' times.
func writeUploaded(t *testing.T, svc *meta.Service, c *Client, clk *clock.Fake, stores map[string]*disk.Store, name string, n int) (*Handle, meta.Inode, []byte) {
	t.Helper()
	ctx := context.Background()
	in := createFile(t, svc, name)
	h := open(t, c, in.Ino)
	data := make([]byte, n*64<<10)
	rand.New(rand.NewSource(int64(len(name)))).Read(data)
	write(t, h, 0, data)
	waitFor(t, func() bool {
		h.f.mu.Lock()
		defer h.f.mu.Unlock()
		return len(h.f.pending) == n && h.f.nInflight == 0
	})
	clk.Advance(2 * time.Hour)
	old := time.Now().Add(-2 * time.Hour)
	for _, st := range stores {
		err := st.List(ctx, func(info block.Info) error { return chtimes(st.Path(info.Hash), old) })
		if err != nil {
			t.Fatal(err)
		}
	}
	return h, in, data
}

// TestCommitTouchesOldUploads: before a commit names blocks uploaded a
// while ago, the client marks them as just written on their servers, so a
// collection running meanwhile (cutoff: now minus the grace) spares them.
func TestCommitTouchesOldUploads(t *testing.T) {
	ctx := context.Background()
	svc, c, clk, stores, _ := touchEnv(t)
	h, in, data := writeUploaded(t, svc, c, clk, stores, "f", 4)
	start := time.Now()
	if err := h.Flush(ctx); err != nil {
		t.Fatalf("commit of uploads aged 2 h: %v", err)
	}
	cutoff := start.Add(-time.Hour).UnixNano()
	for id, st := range stores {
		err := st.List(ctx, func(info block.Info) error {
			if removed, err := st.Remove(ctx, info.Hash, cutoff); removed || err != nil {
				t.Errorf("server %s: block %s, aged 2 h and touched by the commit, removed by a collection with a 1 h grace (%v)", id, info.Hash.Short(), err)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// A fresh client reads the committed file back.
	got := readAt(t, open(t, testClient(t, svc, stores, Config{}), in.Ino), len(data)+1)
	if string(got) != string(data) {
		t.Fatalf("read back %d of %d bytes, equal: %v", len(got), len(data), string(got) == string(data))
	}
}

// TestCommitOfCollectedUploadsFails: uploads a collection removed before
// their commit (the client was cut off longer than the grace) make the
// commit fail with EIO naming them, instead of a recipe naming blocks that
// are gone; the file keeps its committed content. Writes the application
// made after the lost ones are never committed around the gap (a second
// mount would read zeros where acknowledged data was): the descriptor fails
// every write and commit until the file is closed, and a fresh open works.
func TestCommitOfCollectedUploadsFails(t *testing.T) {
	ctx := context.Background()
	svc, c, clk, stores, cl := touchEnv(t)
	h, in, data := writeUploaded(t, svc, c, clk, stores, "g", 3)
	rep, err := admin.GC(ctx, cl, time.Hour, time.Now())
	if err != nil || rep.Removed != 3 {
		t.Fatalf("collection: %+v, %v; want the 3 uncommitted blocks removed", rep, err)
	}
	// The writer goes on past the lost blocks, still buffered.
	write(t, h, int64(len(data)), []byte("written after the lost blocks"))
	err = h.Flush(ctx)
	if !errors.Is(err, syscall.EIO) || !strings.Contains(err.Error(), "on no block server") {
		t.Fatalf("commit of collected uploads: %v; want EIO saying the blocks are on no block server", err)
	}
	if got, err := svc.GetAttr(ctx, in.Ino); err != nil || got.Size != 0 {
		t.Fatalf("after the failed commit: size %d, %v; want the committed size 0", got.Size, err)
	}
	if _, err := h.Write(ctx, int64(len(data))+100, []byte("more")); !errors.Is(err, syscall.EIO) {
		t.Fatalf("write after the loss: %v; want EIO", err)
	}
	if err := h.Flush(ctx); !errors.Is(err, syscall.EIO) {
		t.Fatalf("a later commit on the same descriptor: %v; want EIO", err)
	}
	if got, err := svc.GetAttr(ctx, in.Ino); err != nil || got.Size != 0 {
		t.Fatalf("after a later commit: size %d, %v; want 0 (no write around the lost ones is committed)", got.Size, err)
	}
	h.Release(ctx)
	// Closed everywhere: the file is as committed, and usable again.
	h2 := open(t, c, in.Ino)
	write(t, h2, 0, []byte("fresh"))
	if err := h2.Flush(ctx); err != nil {
		t.Fatalf("commit after reopening: %v", err)
	}
	h2.Release(ctx)
	got := readAt(t, open(t, testClient(t, svc, stores, Config{}), in.Ino), 100)
	if string(got) != "fresh" {
		t.Fatalf("read back %q; want %q", got, "fresh")
	}
}

func chtimes(path string, t time.Time) error { return os.Chtimes(path, t, t) }
