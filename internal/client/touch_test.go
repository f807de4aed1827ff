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
	"tessera/internal/kv/memkv"
	"tessera/internal/meta"
)

// touchEnv is a meta service with 64 KiB blocks and two disk block
// servers, a client that touches every upload older than 1 ms before its
// commit, and the cluster view the collector uses.
func touchEnv(t *testing.T) (*meta.Service, *Client, map[string]*disk.Store, *admin.Cluster) {
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
	c := testClient(t, svc, stores, Config{TouchAfter: time.Millisecond})
	cl := &admin.Cluster{Meta: svc, Dial: func(s meta.Server) (admin.BlockServer, error) { return stores[s.ID], nil }}
	return svc, c, stores, cl
}

// writeUploaded writes n whole blocks to a new file and waits until they
// are uploaded, not committed; then it ages every block file by two hours.
func writeUploaded(t *testing.T, svc *meta.Service, c *Client, stores map[string]*disk.Store, name string, n int) (*Handle, meta.Inode, []byte) {
	t.Helper()
	ctx := context.Background()
	in, err := svc.Create(ctx, meta.CreateReq{Parent: meta.RootIno, Name: name, Mode: 0o100644})
	if err != nil {
		t.Fatal(err)
	}
	h, _, err := c.Open(ctx, in, 0)
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, n*64<<10)
	rand.New(rand.NewSource(int64(len(name)))).Read(data)
	if _, err := h.Write(ctx, 0, data); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		h.f.mu.Lock()
		done := len(h.f.pending) == n && h.f.nInflight == 0
		h.f.mu.Unlock()
		if done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("uploads did not finish")
		}
	}
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
	svc, c, stores, _ := touchEnv(t)
	h, in, data := writeUploaded(t, svc, c, stores, "f", 4)
	start := time.Now()
	if err := h.Flush(ctx); err != nil {
		t.Fatalf("commit of uploads aged 2 h: %v", err)
	}
	h.Release(ctx)
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
	c2 := testClient(t, svc, stores, Config{})
	in, err := svc.GetAttr(ctx, in.Ino)
	if err != nil {
		t.Fatal(err)
	}
	h2, _, err := c2.Open(ctx, in, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer h2.Release(ctx)
	got := make([]byte, len(data)+1)
	if n, err := h2.Read(ctx, 0, got); n != len(data) || string(got[:n]) != string(data) {
		t.Fatalf("read back %d of %d bytes (%v), equal: %v", n, len(data), err, string(got[:n]) == string(data))
	}
}

// TestCommitOfCollectedUploadsFails: uploads a collection removed before
// their commit (the client was cut off longer than the grace) make the
// commit fail with EIO naming them, instead of a recipe naming blocks that
// are gone; the file keeps its committed content and later commits work.
func TestCommitOfCollectedUploadsFails(t *testing.T) {
	ctx := context.Background()
	svc, c, stores, cl := touchEnv(t)
	h, in, _ := writeUploaded(t, svc, c, stores, "g", 3)
	rep, err := admin.GC(ctx, cl, time.Hour, time.Now())
	if err != nil || rep.Removed != 3 {
		t.Fatalf("collection: %+v, %v; want the 3 uncommitted blocks removed", rep, err)
	}
	err = h.Flush(ctx)
	if !errors.Is(err, syscall.EIO) || !strings.Contains(err.Error(), "on no block server") {
		t.Fatalf("commit of collected uploads: %v; want EIO saying the blocks are on no block server", err)
	}
	if got, err := svc.GetAttr(ctx, in.Ino); err != nil || got.Size != 0 {
		t.Fatalf("after the failed commit: size %d, %v; want the committed size 0", got.Size, err)
	}
	if err := h.Flush(ctx); err != nil {
		t.Fatalf("a later commit: %v", err)
	}
	if got, err := svc.GetAttr(ctx, in.Ino); err != nil || got.Size != 0 {
		t.Fatalf("after a later commit: size %d, %v; want 0 (the lost writes are not committed as holes)", got.Size, err)
	}
	h.Release(ctx)
}

func chtimes(path string, t time.Time) error { return os.Chtimes(path, t, t) }
