package admin

import (
	"context"
	"errors"
	"math"
	"syscall"
	"testing"
	"time"

	"tessera/internal/block"
	"tessera/internal/block/disk"
	"tessera/internal/kv/memkv"
	"tessera/internal/meta"
)

// failingList is a block server that cannot be listed.
type failingList struct{ *disk.Store }

func (failingList) List(context.Context, func(block.Info) error) error { return block.ErrUnavailable }

// TestGCDropsReleases: a complete collection drops the releases made
// before its cutoff (it removed what they name); one that could not list
// every server keeps them for the reclaimer.
func TestGCDropsReleases(t *testing.T) {
	ctx := context.Background()
	svc, err := meta.New(memkv.New(), meta.Options{BlockSize: 64 << 10})
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
		if _, err := svc.RegisterServer(ctx, meta.Server{ID: id, Addr: id}); err != nil {
			t.Fatal(err)
		}
	}
	in, err := svc.Create(ctx, meta.CreateReq{Parent: meta.RootIno, Name: "f", Mode: syscall.S_IFREG | 0o644})
	if err != nil {
		t.Fatal(err)
	}
	commit := func(content string) block.Hash {
		data := []byte(content)
		h := block.Sum(data)
		for _, st := range stores {
			if err := st.Put(ctx, h, data); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := svc.Commit(ctx, meta.CommitReq{Ino: in.Ino, Forced: true, Size: 100,
			Changes: []meta.BlockChange{{Index: 0, New: h}}}); err != nil {
			t.Fatal(err)
		}
		return h
	}
	releases := func() int {
		rs, _, err := svc.Releases(ctx, meta.Release{}, math.MaxInt64, 100)
		if err != nil {
			t.Fatal(err)
		}
		return len(rs)
	}
	commit("one")
	commit("two") // releases "one"
	time.Sleep(2 * time.Millisecond)

	broken := &Cluster{Meta: svc, Dial: func(s meta.Server) (BlockServer, error) {
		if s.ID == "b1" {
			return failingList{stores[s.ID]}, nil
		}
		return stores[s.ID], nil
	}}
	if _, err := GC(ctx, broken, 0, time.Now()); !errors.Is(err, block.ErrUnavailable) {
		t.Fatalf("collection with b1 unlisted: %v, want its error", err)
	}
	if n := releases(); n != 1 {
		t.Fatalf("%d releases after an incomplete collection, want 1 kept", n)
	}

	c := &Cluster{Meta: svc, Dial: func(s meta.Server) (BlockServer, error) { return stores[s.ID], nil }}
	r, err := GC(ctx, c, 0, time.Now())
	if err != nil || r.ReleasesDropped != 1 || r.Removed != 1 {
		t.Fatalf("complete collection: %+v, %v; want b1's copy removed and the release dropped", r, err)
	}
	if n := releases(); n != 0 {
		t.Fatalf("%d releases after a complete collection, want 0", n)
	}
}
