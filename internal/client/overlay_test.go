package client

import (
	"context"
	"testing"
)

// TestOverlayIgnoresOlderReply: a clean file marked stale (a callback came)
// takes the attributes of a newer reply, but not those of a reply older than
// its own latest commit (a Link whose transaction ran before the file's
// background commit): that one would show the kernel the size before the
// commit (fsx: "link f0 -> f3: stat f0: size 8388609, want 14342145").
func TestOverlayIgnoresOlderReply(t *testing.T) {
	const bs = 64 << 10
	e := newEnv(t, bs, 0)
	ctx := context.Background()
	in := e.create(t, "f")
	h, _, err := e.c.Open(ctx, in, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release(ctx)
	if _, err := h.Write(ctx, 0, make([]byte, 2*bs)); err != nil {
		t.Fatal(err)
	}
	if err := h.Fsync(ctx); err != nil {
		t.Fatal(err)
	}
	committed, err := e.api.GetAttr(ctx, in.Ino)
	if err != nil {
		t.Fatal(err)
	}
	e.c.mu.Lock()
	f := e.c.mu.files[in.Ino]
	e.c.mu.Unlock()
	f.mu.Lock()
	f.stale = true
	f.mu.Unlock()

	older := in // the inode as it was before the write's commit
	older.Nlink = 2
	e.c.Overlay(&older)
	if older.Size != committed.Size {
		t.Fatalf("an older reply overlaid: size %d, want the committed %d", older.Size, committed.Size)
	}
	newer := committed
	newer.Change++
	newer.Size = 5
	e.c.Overlay(&newer)
	if newer.Size != 5 {
		t.Fatalf("a newer reply was overridden: size %d, want its own 5", newer.Size)
	}
}
