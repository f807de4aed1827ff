package client

import (
	"bytes"
	"context"
	"testing"
	"time"

	"tessera/internal/meta"
)

// Data written under a commit-on-close policy and left open is committed
// once older than MaxUncommitted: the block collector, which spares only
// young unreferenced blocks, never meets an upload a client still holds.
func TestOldWritesCommitted(t *testing.T) {
	ctx := context.Background()
	svc, _, stores := newReplicaEnv(t, 2, 1)
	c := testClient(t, svc, stores, Config{MaxUncommitted: 300 * time.Millisecond})
	in, err := svc.Create(ctx, meta.CreateReq{Parent: meta.RootIno, Name: "f", Mode: 0o100644})
	if err != nil {
		t.Fatal(err)
	}
	h, _, err := c.Open(ctx, in, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release(ctx)
	data := bytes.Repeat([]byte("x"), 3*64<<10+5) // the env's blocks are 64 KiB
	if _, err := h.Write(ctx, 0, data); err != nil {
		t.Fatal(err)
	}
	if got, _ := svc.GetAttr(ctx, in.Ino); got.Size != 0 {
		t.Fatalf("size %d committed at once; the session policy commits on close", got.Size)
	}
	deadline := time.Now().Add(time.Minute) // for a hang only
	for {
		got, err := svc.GetAttr(ctx, in.Ino)
		if err != nil {
			t.Fatal(err)
		}
		if got.Size == uint64(len(data)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("written data still uncommitted after a minute (MaxUncommitted 300 ms): size %d", got.Size)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if c.aged.Load() == 0 {
		t.Fatal("committed, but not by the background commit")
	}
}
