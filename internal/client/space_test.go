package client

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"tessera/internal/block"
	"tessera/internal/kv/memkv"
	"tessera/internal/meta"
)

// spaceStore is a block server whose file system has fixed figures (the
// sums are what this test is about, not the servers).
type spaceStore struct {
	memStore
	sp  block.Space
	err error
}

func (s *spaceStore) SpaceInfo(context.Context) (block.Space, error) { return s.sp, s.err }

// plainStore cannot tell its space.
type plainStore struct{ memStore }

// TestSpaceCountsEachFileSystemOnceOverReplicas: Space sums the file
// systems of the servers taking new blocks, each once however many servers
// share it, leaves out draining servers and those that cannot say or fail,
// and divides by the replicas.
func TestSpaceCountsEachFileSystemOnceOverReplicas(t *testing.T) {
	ctx := context.Background()
	svc, err := meta.New(memkv.New(), meta.Options{BlockSize: 64 << 10, Replicas: 2})
	if err != nil {
		t.Fatal(err)
	}
	mem := func() memStore { return memStore{blocks: map[block.Hash][]byte{}} }
	stores := map[string]block.Store{
		"b0": &spaceStore{memStore: mem(), sp: block.Space{Free: 100 << 20, Size: 1000 << 20, FS: "host1:fsA"}},
		"b1": &spaceStore{memStore: mem(), sp: block.Space{Free: 100 << 20, Size: 1000 << 20, FS: "host1:fsA"}},
		"b2": &spaceStore{memStore: mem(), sp: block.Space{Free: 50 << 20, Size: 500 << 20, FS: "host2:fsA"}},
		"b3": &spaceStore{memStore: mem(), sp: block.Space{Free: 7 << 20, Size: 7 << 20, FS: "host3:fsA"}},
		"b4": &plainStore{mem()},
		"b5": &spaceStore{memStore: mem(), err: fmt.Errorf("unreachable: %w", block.ErrUnavailable)},
		"b6": &spaceStore{memStore: mem(), sp: block.Space{Free: 10 << 20, Size: 20 << 20}}, // cannot name its file system
	}
	for id := range stores {
		state := meta.StateUp
		if id == "b3" {
			state = meta.StateDraining
		}
		if _, err := svc.RegisterServer(ctx, meta.Server{ID: id, Addr: id, State: state}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := svc.SetServerState(ctx, "b3", meta.StateDraining); err != nil {
		t.Fatal(err)
	}
	c := testClient(t, svc, stores, Config{})
	free, size, err := c.Space(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(100+50+10) << 20 / 2; free != want {
		t.Errorf("free = %d MiB, want %d MiB", free>>20, want>>20)
	}
	if want := int64(1000+500+20) << 20 / 2; size != want {
		t.Errorf("size = %d MiB, want %d MiB", size>>20, want>>20)
	}

	none := map[string]block.Store{"b0": &plainStore{mem()}}
	svc2, err := meta.New(memkv.New(), meta.Options{BlockSize: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc2.RegisterServer(ctx, meta.Server{ID: "b0", Addr: "b0", State: meta.StateUp}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := testClient(t, svc2, none, Config{}).Space(ctx); !errors.Is(err, block.ErrNoSpaceInfo) {
		t.Errorf("space when no server can say: %v, want ErrNoSpaceInfo", err)
	}
}
