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
