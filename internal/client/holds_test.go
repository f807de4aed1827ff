package client

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"tessera/internal/meta"
)

// TestOpenSurvivesUnlinkElsewhere: client B has a file open; client A,
// which has not, unlinks it. B keeps reading and writing it through its
// handle; the inode goes with B's close.
func TestOpenSurvivesUnlinkElsewhere(t *testing.T) {
	e := newSessionEnv(t, 16<<10)
	a, _ := e.client(t)
	b, _ := e.client(t)
	ctx := context.Background()
	f := createFile(t, a.Meta(), "f")
	writeAt(t, a, f.Ino, 0, []byte("before the unlink"))
	h, _, _, err := b.OpenIno(ctx, f.Ino, 0)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := a.Unlink(ctx, meta.RootIno, "f"); err != nil || out.Nlink != 0 {
		t.Fatalf("unlink: nlink %d, %v", out.Nlink, err)
	}
	if got := readAt(t, h, 100); !bytes.Equal(got, []byte("before the unlink")) {
		t.Fatalf("read after the unlink elsewhere: %q", got)
	}
	if _, err := h.Write(ctx, 0, []byte("AFTER")); err != nil {
		t.Fatalf("write after the unlink elsewhere: %v", err)
	}
	if err := h.Fsync(ctx); err != nil {
		t.Fatalf("fsync after the unlink elsewhere: %v", err)
	}
	if got := readAt(t, h, 100); !bytes.Equal(got, []byte("AFTERe the unlink")) {
		t.Fatalf("read back: %q", got)
	}
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.GetAttr(ctx, f.Ino); !errors.Is(err, meta.ErrNotFound) {
		t.Fatalf("getattr after the last close: %v, want ENOENT", err)
	}
}

// TestOpensReannounced: when B's session ends (expired, or the meta service
// restarted), B opens a new one and announces the files it has open, so an
// unlink elsewhere afterwards leaves them to it.
func TestOpensReannounced(t *testing.T) {
	e := newSessionEnv(t, 16<<10)
	a, _ := e.client(t)
	b, _ := e.client(t)
	ctx := context.Background()
	f := createFile(t, a.Meta(), "f")
	writeAt(t, a, f.Ino, 0, []byte("held"))
	h, _, _, err := b.OpenIno(ctx, f.Ino, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release(ctx)
	old := b.Session()
	if err := e.svc.CloseSession(ctx, old); err != nil {
		t.Fatal(err)
	}
	for i := 0; b.holds.announced.Load() == 0; i++ {
		if i == 3000 {
			t.Fatal("B did not re-announce its opens within 30 s of losing its session")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if b.Session() == old {
		t.Fatal("B re-announced on its old session")
	}
	if _, err := a.Unlink(ctx, meta.RootIno, "f"); err != nil {
		t.Fatal(err)
	}
	if got := readAt(t, h, 100); !bytes.Equal(got, []byte("held")) {
		t.Fatalf("read after the unlink elsewhere: %q", got)
	}
}
