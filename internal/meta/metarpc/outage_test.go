package metarpc_test

import (
	"context"
	"errors"
	"net"
	"syscall"
	"testing"

	"tessera/internal/kv/memkv"
	"tessera/internal/meta"
	"tessera/internal/meta/metarpc"
)

// TestOutageErrors: a client whose server went away says so with
// meta.ErrUnreachable, and reconnects once a server listens on the address
// again; a call whose connection broke after it was sent says
// meta.ErrReplyLost. Both still read as EIO.
func TestOutageErrors(t *testing.T) {
	ctx := context.Background()
	store := memkv.New()
	t.Cleanup(func() { store.Close() })
	svc, err := meta.New(store, meta.Options{})
	if err != nil {
		t.Fatal(err)
	}
	blocked := &blocking{API: svc, entered: make(chan struct{}), release: make(chan struct{})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	done := make(chan error, 1)
	go func() { done <- metarpc.Serve(ln, blocked, metarpc.ServeOptions{}) }()
	c := dial(t, addr)
	if _, err := c.GetAttr(ctx, meta.RootIno); err != nil {
		t.Fatal(err)
	}

	// Sent, then the server went away before it answered.
	lost := make(chan error, 1)
	go func() { _, err := c.Lookup(ctx, meta.RootIno, "x"); lost <- err }()
	<-blocked.entered
	ln.Close()
	err = <-lost
	close(blocked.release)
	<-done
	if !errors.Is(err, meta.ErrReplyLost) || !errors.Is(err, syscall.EIO) {
		t.Fatalf("call cut by the server's exit: %v, want ErrReplyLost and EIO", err)
	}

	// Nothing listens: unreachable.
	_, err = c.GetAttr(ctx, meta.RootIno)
	if !errors.Is(err, meta.ErrUnreachable) || !errors.Is(err, syscall.EIO) || meta.Unavailable(nil) {
		t.Fatalf("call with the server gone: %v, want ErrUnreachable and EIO", err)
	}

	// The server is back on its address: the same client reconnects.
	ln2, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("address %s taken again meanwhile: %v", addr, err)
	}
	go func() { done <- metarpc.Serve(ln2, svc, metarpc.ServeOptions{}) }()
	t.Cleanup(func() { ln2.Close(); <-done })
	for i := 0; i < 3; i++ { // every pooled connection
		if _, err := c.GetAttr(ctx, meta.RootIno); err != nil {
			t.Fatalf("call %d after the server came back: %v", i, err)
		}
	}

	// Closed by its owner: plain EIO, not an outage.
	c.Close()
	if _, err := c.GetAttr(ctx, meta.RootIno); !errors.Is(err, syscall.EIO) || meta.Unavailable(err) {
		t.Fatalf("call on a closed client: %v, want EIO that is no outage", err)
	}
}

// blocking holds Lookup until release is closed.
type blocking struct {
	meta.API
	entered, release chan struct{}
}

func (b *blocking) Lookup(ctx context.Context, parent meta.Ino, name string) (meta.Inode, error) {
	close(b.entered)
	<-b.release
	return b.API.Lookup(ctx, parent, name)
}
