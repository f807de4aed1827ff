package client

import (
	"context"
	"errors"
	"math/rand"
	"strings"
	"syscall"
	"testing"
	"time"

	"tessera/internal/block"
	"tessera/internal/block/disk"
	"tessera/internal/meta"
	"tessera/internal/reclaim"
)

// Tests of the client against the reclaimer (package reclaim), which
// removes a block from every server its window after the last recipe entry
// naming it went, sparing copies written or touched since.

// reclaimerOf returns a reclaimer over svc and stores whose clock runs
// ahead of the real one by more than its window, so every release made so
// far is due.
func reclaimerOf(svc *meta.Service, stores map[string]*disk.Store) *reclaim.Reclaimer {
	return reclaim.New(reclaim.Config{
		Meta:  svc,
		Dial:  func(s meta.Server) (reclaim.Remover, error) { return stores[s.ID], nil },
		After: time.Minute,
		Now:   func() time.Time { return time.Now().Add(2 * time.Minute) },
	})
}

func oneBlock(seed int64) []byte {
	data := make([]byte, 64<<10)
	rand.New(rand.NewSource(seed)).Read(data)
	return data
}

func holdersOf(t *testing.T, stores map[string]*disk.Store, h block.Hash) int {
	t.Helper()
	n := 0
	for _, st := range stores {
		ok, err := st.Has(context.Background(), []block.Hash{h})
		if err != nil {
			t.Fatal(err)
		}
		if ok[0] {
			n++
		}
	}
	return n
}

// TestRewriteAfterReleaseSurvivesReclaim: a block released by one file and
// written again by another before the reclaimer runs is kept, even while
// the second file has not committed it: writing it again, the client finds
// the copy already held and puts it there anyway, which marks it as
// written after the release (a dedup that skipped the upload would have
// relied on a copy the reclaimer removes).
func TestRewriteAfterReleaseSurvivesReclaim(t *testing.T) {
	ctx := context.Background()
	svc, c, _, stores, _ := touchEnv(t)
	data := oneBlock(1)
	h := block.Sum(data)
	a := createFile(t, svc, "a")
	writeAt(t, c, a.Ino, 0, data)
	writeAt(t, c, a.Ino, 0, oneBlock(2)) // releases h
	if n, err := svc.BlockRefs(ctx, h); err != nil || n != 0 || holdersOf(t, stores, h) != 1 {
		t.Fatalf("after the overwrite: %d references (%v), %d copies; want 0 and 1", n, err, holdersOf(t, stores, h))
	}
	time.Sleep(2 * time.Millisecond) // the release and the rewrite are apart on the clock

	b := createFile(t, svc, "b")
	hb := open(t, c, b.Ino)
	write(t, hb, 0, data)
	waitFor(t, func() bool {
		hb.f.mu.Lock()
		defer hb.f.mu.Unlock()
		return len(hb.f.pending) == 1 && hb.f.nInflight == 0
	})
	rep, err := reclaimerOf(svc, stores).Round(ctx)
	if err != nil || rep.Due != 1 || rep.Removed != 0 {
		t.Fatalf("reclaimer round: %+v, %v; want the release due and no copy removed", rep, err)
	}
	flush(t, hb)
	got := readAt(t, open(t, testClient(t, svc, stores, Config{}), b.Ino), len(data)+1)
	if string(got) != string(data) {
		t.Fatalf("read back %d bytes, equal: %v", len(got), string(got) == string(data))
	}
}

// TestUploadBeforeReleaseFailsCleanly: the case the reclaimer cannot see.
// File b uploads content that file a names; a lets go of it; b commits
// only after the reclaimer removed it. b's commit touches its old uploads
// first, finds the block gone and fails with EIO: b keeps its committed
// content rather than a recipe naming a missing block.
func TestUploadBeforeReleaseFailsCleanly(t *testing.T) {
	ctx := context.Background()
	svc, c, clk, stores, _ := touchEnv(t)
	data := oneBlock(3)
	a := createFile(t, svc, "a")
	writeAt(t, c, a.Ino, 0, data)
	b := createFile(t, svc, "b")
	hb := open(t, c, b.Ino)
	write(t, hb, 0, data)
	waitFor(t, func() bool {
		hb.f.mu.Lock()
		defer hb.f.mu.Unlock()
		return len(hb.f.pending) == 1 && hb.f.nInflight == 0
	})
	time.Sleep(2 * time.Millisecond)
	writeAt(t, c, a.Ino, 0, oneBlock(4)) // releases the block b holds uncommitted
	rep, err := reclaimerOf(svc, stores).Round(ctx)
	if err != nil || rep.Removed == 0 {
		t.Fatalf("reclaimer round: %+v, %v; want the block removed", rep, err)
	}
	clk.Advance(2 * time.Hour) // b's upload is now old enough to be touched
	err = hb.Flush(ctx)
	if !errors.Is(err, syscall.EIO) || !strings.Contains(err.Error(), "on no block server") {
		t.Fatalf("commit of the removed upload: %v; want EIO saying the block is on no block server", err)
	}
	if in, err := svc.GetAttr(ctx, b.Ino); err != nil || in.Size != 0 {
		t.Fatalf("b after the failed commit: size %d, %v; want its committed size 0", in.Size, err)
	}
}
