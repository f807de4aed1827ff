package client_test

import (
	"context"
	"testing"
	"time"

	"tessera/internal/block"
	"tessera/internal/block/blocktest"
	"tessera/internal/block/client"
	"tessera/internal/block/server"
	"tessera/internal/clock"
)

// slowWalk is a store whose listing finds its first block only after a
// long walk (a store of many empty directories was one): wait of clk's time.
type slowWalk struct {
	server.Backend
	clk  *clock.Fake
	wait time.Duration
}

func (s slowWalk) List(ctx context.Context, fn func(block.Info) error) error {
	until := s.clk.Now().Add(s.wait)
	for s.clk.Now().Before(until) {
		if err := ctx.Err(); err != nil {
			return err
		}
		time.Sleep(time.Millisecond)
	}
	return s.Backend.List(ctx, fn)
}

// TestListSurvivesASlowWalk: a listing whose first record takes longer
// than a try's timeout (the mover's 'list blocks: try timed out') is not
// cut while the server walks: the server answers at once and the records
// follow, each within the listing's own stall bound.
func TestListSurvivesASlowWalk(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(time.Unix(0, 0))
	st := openDisk(t, t.TempDir())
	want := map[block.Hash]bool{}
	for i := range 5 {
		data := blocktest.Data(uint64(i), 100)
		h := block.Sum(data)
		if err := st.Put(ctx, h, data); err != nil {
			t.Fatal(err)
		}
		want[h] = true
	}
	const attempt = 2 * time.Second
	c := serve(t, server.New(slowWalk{st, clk, 3 * attempt}, server.Options{}), client.Options{Clock: clk, AttemptTimeout: attempt})
	done := make(chan error, 1)
	got := map[block.Hash]bool{}
	go func() {
		done <- c.List(ctx, func(info block.Info) error { got[info.Hash] = true; return nil })
	}()
	// The clock moves in steps far shorter than every bound, so that only
	// the bounds themselves cut a try.
	for {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("list with a walk of %v before its first block: %v", 3*attempt, err)
			}
			if len(got) != len(want) {
				t.Fatalf("listed %d blocks, want %d", len(got), len(want))
			}
			return
		case <-time.After(time.Millisecond):
			clk.Advance(50 * time.Millisecond)
		}
	}
}
