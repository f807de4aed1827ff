package gateway_test

import (
	"bytes"
	"context"
	"slices"
	"testing"
	"time"

	"tessera/internal/gateway"
)

// TestReadAheadStartsNextWindow: with prefetch range, when a sequential
// reader reaches the first block of the window being prefetched (and
// misses: it is still in flight), the next window's home reads are
// already under way while the reader waits, so that the link does not
// idle between windows. Home reads are held by the test (gateHome): no
// timing is involved.
func TestReadAheadStartsNextWindow(t *testing.T) {
	const blocks, window = 16, 4
	e, gh, in, data := newGateEnv(t, window, blocks)
	grp := gateway.NewGroup(e.g)
	grp.RangeSize, grp.Window = window*bs, window*bs
	t.Cleanup(func() { grp.Close() })
	ctx := context.Background()

	// The first miss: block 0 is read and stored; the window [1, 5) is
	// read in the background, and the test holds those reads.
	fetched := make(chan error, 1)
	go func() { _, err := grp.Fetch(ctx, in.Ino, 10, 100); fetched <- err }()
	var held []gateRead
	done := false
	for !done || len(held) < window {
		select {
		case err := <-fetched:
			if err != nil {
				t.Fatal(err)
			}
			done = true
		case r := <-gh.started:
			if r.off < bs {
				r.go_ <- nil
			} else {
				held = append(held, r)
			}
		case <-time.After(time.Minute):
			t.Fatalf("after a minute: the first miss done %v, %d reads of the window held", done, len(held))
		}
	}
	offs := func(rs []gateRead) []int64 {
		var o []int64
		for _, r := range rs {
			o = append(o, r.off/bs)
		}
		slices.Sort(o)
		return o
	}
	if got := offs(held); !slices.Equal(got, []int64{1, 2, 3, 4}) {
		t.Fatalf("blocks read after the first miss: %v, want the window 1-4", got)
	}

	// The reader enters the window at its first block, still in flight.
	go func() { _, err := grp.Fetch(ctx, in.Ino, bs+10, 100); fetched <- err }()
	var next []gateRead
	for len(next) < window {
		next = append(next, nextRead(t, gh, fetched))
	}
	if got := offs(next); !slices.Equal(got, []int64{5, 6, 7, 8}) {
		t.Errorf("blocks read while the reader waits in the window: %v, want the next window 5-8", got)
	}
	for _, r := range append(held, next...) {
		r.go_ <- nil
	}
	if err := <-fetched; err != nil {
		t.Fatal(err)
	}
	// The rest is read as it comes (the reader's miss in the second
	// window started the third).
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case r := <-gh.started:
				r.go_ <- nil
			case <-stop:
				return
			}
		}
	}()
	idle(t, grp)
	close(stop)
	if got := e.read(t, in.Ino)[:9*bs]; !bytes.Equal(got, data[:9*bs]) {
		t.Errorf("the first nine blocks differ from home's")
	}
}
