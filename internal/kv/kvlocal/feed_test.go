package kvlocal

import (
	"context"
	"fmt"
	"testing"

	"tessera/internal/kv"
)

func publish(f *Feed, key string) int64 {
	return f.Publish([]kv.Change{{Key: []byte(key), Value: []byte("v")}})
}

// TestSlowWatcherDropped: a watcher that lags more than MaxQueued commits
// gets its channel closed (it must resync) instead of holding up commits or
// memory; what it received before is in order.
func TestSlowWatcherDropped(t *testing.T) {
	var f Feed
	ch, err := f.Watch(context.Background(), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	total := MaxQueued + 10
	for i := range total {
		publish(&f, fmt.Sprintf("k%d", i))
	}
	got := 0
	last := int64(0)
	for b := range ch {
		if b[0].Rev <= last {
			t.Fatalf("revision %d after %d", b[0].Rev, last)
		}
		last = b[0].Rev
		got++
		if got > total {
			t.Fatal("more batches than commits")
		}
	}
	if got >= total {
		t.Fatalf("a watcher %d commits behind got all %d: not dropped", total, got)
	}
}

// TestWatchFromHistory: from a revision still in the history the commits
// after it are replayed; from one older than the history the channel
// closes at once; from a future revision nothing up to it is delivered.
func TestWatchFromHistory(t *testing.T) {
	var f Feed
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for i := range HistoryCommits + 5 {
		publish(&f, fmt.Sprintf("k%d", i))
	}
	cur := f.rev
	ch, err := f.Watch(ctx, nil, cur-2)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []int64{cur - 1, cur} {
		if b := <-ch; b[0].Rev != want {
			t.Fatalf("replayed revision %d, want %d", b[0].Rev, want)
		}
	}
	old, err := f.Watch(ctx, nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	if b, ok := <-old; ok {
		t.Fatalf("a watch from a revision no longer held delivered %v", b)
	}
	future, err := f.Watch(ctx, nil, cur+1)
	if err != nil {
		t.Fatal(err)
	}
	publish(&f, "skipped")
	r := publish(&f, "seen")
	if b := <-future; b[0].Rev != r || string(b[0].Key) != "seen" {
		t.Fatalf("watch from %d got %q at %d", cur+1, b[0].Key, b[0].Rev)
	}
	f.Close()
	for range ch {
	}
	if _, err := f.Watch(ctx, nil, 0); err == nil {
		t.Fatal("Watch after Close succeeded")
	}
}

// TestHistoryHeldBytes: the history holds at most 1 MiB of keys and values
// however much was committed (the daemon's whole live heap at an untar's
// peak is ~50 MB; the history held 9 MB of it), and still replays the
// latest commit.
func TestHistoryHeldBytes(t *testing.T) {
	var f Feed
	val := make([]byte, 64<<10)
	for i := range 64 {
		f.Publish([]kv.Change{{Key: fmt.Appendf(nil, "k%d", i), Value: val}})
	}
	if f.bytes > 1<<20 {
		t.Fatalf("after 4 MiB of commits the history holds %d KiB; want at most 1024", f.bytes>>10)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := f.Watch(ctx, nil, f.rev-1)
	if err != nil {
		t.Fatal(err)
	}
	if b, ok := <-ch; !ok || b[0].Rev != f.rev {
		t.Fatalf("replay of the latest commit: %v, %v", b, ok)
	}
}
