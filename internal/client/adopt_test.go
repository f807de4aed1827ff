package client

import (
	"bytes"
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"tessera/internal/block"
	"tessera/internal/meta"
)

// pausedOpens is the meta service with a HoldOpen that can be paused
// after the service answered and before the reply reaches the client: the
// window in which a change made elsewhere is called back to the client
// while the old attributes are on their way.
type pausedOpens struct {
	*meta.Service
	armed   atomic.Bool
	read    chan meta.Inode // the paused reply, when it was read
	release chan struct{}
}

// WithSession implements meta.SessionBinder.
func (p *pausedOpens) WithSession(id meta.SessionID) meta.API {
	return &pausedBound{API: p.Service.WithSession(id), p: p}
}

type pausedBound struct {
	meta.API
	p *pausedOpens
}

func (b *pausedBound) HoldOpen(ctx context.Context, ino meta.Ino) (meta.Inode, error) {
	in, err := b.API.HoldOpen(ctx, ino)
	if err == nil && b.p.armed.CompareAndSwap(true, false) {
		b.p.read <- in
		<-b.p.release
	}
	return in, err
}

// TestOpenReplyOlderThanCallback: client B opens a file; its HoldOpen reads
// the old contents and grants B a lease, then A's Sync commit invalidates
// B, B acknowledges (the open holds the file's lock, so the invalidation
// is queued) and A's write returns, and only then does the open's reply
// reach B. A read on B that begins after A's write returned must see it:
// the reply predates the invalidation and may not be cached as fresh (the
// lease it came with is gone, nothing else would correct it). Both for
// the first open on B and for another open of a file B has cached.
func TestOpenReplyOlderThanCallback(t *testing.T) {
	for _, first := range []bool{true, false} {
		name := "another open"
		if first {
			name = "first open"
		}
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			e := newSessionEnv(t, 16<<10)
			a, _ := e.client(t)
			p := &pausedOpens{Service: e.svc, read: make(chan meta.Inode), release: make(chan struct{})}
			b, err := New(ctx, Config{
				Meta:          p,
				Dial:          func(meta.Server) (block.Store, error) { return e.store, nil },
				Logger:        slog.New(slog.DiscardHandler),
				MemCacheBytes: 1 << 20,
				Sessions:      true,
				SyncCommits:   true,
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { b.Close(context.Background()) })
			f := createFile(t, a.Meta(), "f")
			v1 := bytes.Repeat([]byte("1"), 64) // inline: the attributes carry the bytes
			writeAt(t, a, f.Ino, 0, v1)
			if !first {
				h, _, _, err := b.OpenIno(ctx, f.Ino, 0)
				if err != nil {
					t.Fatal(err)
				}
				defer h.Release(ctx)
				if got := readAt(t, h, 100); !bytes.Equal(got, v1) {
					t.Fatalf("B read %q, want v1", got)
				}
			}

			p.armed.Store(true)
			type opened struct {
				h   *Handle
				err error
			}
			done := make(chan opened, 1)
			go func() {
				h, _, _, err := b.OpenIno(ctx, f.Ino, 0)
				done <- opened{h, err}
			}()
			if in := <-p.read; !bytes.Equal(in.Inline, v1) {
				t.Fatalf("the paused open read %q, want v1", in.Inline)
			}
			v2 := bytes.Repeat([]byte("2"), 64)
			writeAt(t, a, f.Ino, 0, v2) // returns once B acknowledged
			close(p.release)
			var o opened
			select {
			case o = <-done:
			case <-time.After(time.Minute): // only a hang reaches this
				t.Fatal("B's open did not return")
			}
			if o.err != nil {
				t.Fatal(o.err)
			}
			defer o.h.Release(ctx)
			if got := readAt(t, o.h, 100); !bytes.Equal(got, v2) {
				t.Fatalf("B read %q after A's write returned, want A's %q", got, v2)
			}
		})
	}
}

// TestCreateReplyOlderThanCallback: B creates a file (open, under a
// lease); before B has it open, A opens it and writes, and A's Sync commit
// returns once B acknowledged the invalidation, which B had no open file to
// apply to. B's open with the create's reply must not serve the
// attributes the create returned: a read that begins after A's write
// returned sees it.
func TestCreateReplyOlderThanCallback(t *testing.T) {
	ctx := context.Background()
	e := newSessionEnv(t, 16<<10)
	a, _ := e.client(t)
	b, _ := e.client(t)
	mark := b.CallbackMark()
	in, err := b.Meta().Create(ctx, meta.CreateReq{Parent: meta.RootIno, Name: "f", Mode: 0o100644, Excl: true, Open: true})
	if err != nil {
		t.Fatal(err)
	}
	v := bytes.Repeat([]byte("a"), 64)
	writeAt(t, a, in.Ino, 0, v) // returns once B acknowledged
	h, _, err := b.OpenCreated(ctx, in, mark, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release(ctx)
	if got := readAt(t, h, 100); !bytes.Equal(got, v) {
		t.Fatalf("B read %q after A's write returned, want A's %q", got, v)
	}
}
