package metarpc_test

import (
	"context"
	"errors"
	"sync"
	"syscall"
	"testing"
	"time"

	"tessera/internal/kv/memkv"
	"tessera/internal/meta"
)

// TestLongPollOverRPC checks that a blocked Callbacks poll returns a
// callback caused by another RPC client's commit, and that calls through
// the polling client are not held up while the poll waits.
func TestLongPollOverRPC(t *testing.T) {
	store := memkv.New()
	t.Cleanup(func() { store.Close() })
	s, err := meta.New(store, meta.Options{SessionTTL: time.Hour}) // real clock; no poll or session ends by itself here
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, s)
	ctx := context.Background()
	writer, reader := dial(t, addr), dial(t, addr)
	wi, err := writer.OpenSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ri, err := reader.OpenSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w, r := writer.WithSession(wi.ID), reader.WithSession(ri.ID)
	f, err := w.Create(ctx, meta.CreateReq{Parent: meta.RootIno, Name: "f", Mode: syscall.S_IFREG | 0644})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.GetAttr(ctx, f.Ino); err != nil {
		t.Fatal(err)
	}

	type polled struct {
		cbs []meta.Callback
		err error
	}
	done := make(chan polled, 1)
	go func() {
		// Longer than any delay of a busy machine: only a change ends it.
		cbs, err := reader.Callbacks(ctx, ri.ID, 0, 5*time.Minute)
		done <- polled{cbs, err}
	}()
	// While the poll waits, the polling client's other calls go through:
	// calls held up behind the poll would return only once it ended.
	for range 2 * 4 { // every pooled connection, twice
		if _, err := r.GetAttr(ctx, f.Ino); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case p := <-done:
		t.Fatalf("the poll returned before any change (were the calls beside it held up until it ended?): %+v, %v", p.cbs, p.err)
	default:
	}
	in, err := w.Commit(ctx, meta.CommitReq{Ino: f.Ino, Size: 123})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case p := <-done:
		if p.err != nil {
			t.Fatal(p.err)
		}
		if len(p.cbs) != 1 || p.cbs[0].Kind != meta.CallbackUpdate || p.cbs[0].Inode.Size != 123 || p.cbs[0].Inode.Change != in.Change {
			t.Fatalf("poll = %+v, want one update to size 123", p.cbs)
		}
	case <-time.After(time.Minute): // for a hang only
		t.Fatal("the long poll did not return the commit's callback")
	}
	if _, err := reader.Callbacks(ctx, meta.SessionID(12345), 0, 0); !errors.Is(err, meta.ErrSessionExpired) {
		t.Fatalf("unknown session over RPC: %v, want ErrSessionExpired", err)
	}
}

// TestStreamDoesNotKeepAStoppedSessionAlive: a session whose client stops
// polling expires at the service although its callback stream stays open
// (a stopped mount must lose its leases, so that writers stop waiting for
// it), and the next poll on that stream gets ErrSessionExpired. The
// service's clock is a fake one the test moves.
func TestStreamDoesNotKeepAStoppedSessionAlive(t *testing.T) {
	store := memkv.New()
	t.Cleanup(func() { store.Close() })
	var mu sync.Mutex
	now := time.Unix(1e9, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	s, err := meta.New(store, meta.Options{SessionTTL: time.Minute, Now: clock,
		After: func(time.Duration) <-chan time.Time { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, serve(t, s))
	ctx := context.Background()
	info, err := c.OpenSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Callbacks(ctx, info.ID, 0, 0); err != nil { // opens the stream
		t.Fatal(err)
	}
	mu.Lock()
	now = now.Add(2 * time.Minute) // past the TTL with the stream open
	mu.Unlock()
	if _, err := c.Callbacks(ctx, info.ID, 0, 0); !errors.Is(err, meta.ErrSessionExpired) || meta.Unavailable(err) {
		t.Fatalf("poll after the TTL: %v, want ErrSessionExpired", err)
	}
	// The expired poll ended the stream: a new session works on the same
	// client.
	info2, err := c.OpenSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Callbacks(ctx, info2.ID, 0, 0); err != nil {
		t.Fatalf("poll of a new session: %v", err)
	}
}
