package metarpc_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"tessera/internal/block"
	"tessera/internal/kv/memkv"
	"tessera/internal/meta"
	"tessera/internal/meta/metarpc"
)

func newService(t testing.TB) *meta.Service {
	store := memkv.New()
	t.Cleanup(func() { store.Close() })
	s, err := meta.New(store, meta.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// stub overrides a few methods of a Service; embedding only meta.API hides
// the Service's optional BlockLister.
type stub struct {
	meta.API
	getattr func(ctx context.Context, ino meta.Ino) (meta.Inode, error)
}

func (s *stub) GetAttr(ctx context.Context, ino meta.Ino) (meta.Inode, error) {
	if s.getattr != nil {
		return s.getattr(ctx, ino)
	}
	return s.API.GetAttr(ctx, ino)
}

func TestErrorsCrossTheWire(t *testing.T) {
	ctx := context.Background()
	st := &stub{API: newService(t)}
	c := dial(t, serve(t, st))

	_, err := c.Lookup(ctx, meta.RootIno, "nope")
	var errno syscall.Errno
	if !errors.Is(err, meta.ErrNotFound) || !errors.As(err, &errno) || errno != syscall.ENOENT {
		t.Fatalf("lookup absent: %v, want ENOENT", err)
	}
	if !strings.Contains(err.Error(), `lookup 1/"nope"`) {
		t.Errorf("message %q lost the server's context", err)
	}

	f, err := c.Create(ctx, meta.CreateReq{Parent: meta.RootIno, Name: "f", Mode: syscall.S_IFREG | 0644})
	if err != nil {
		t.Fatal(err)
	}
	h := block.Sum([]byte("a"))
	if _, err := c.Commit(ctx, meta.CommitReq{Ino: f.Ino, Changes: []meta.BlockChange{{Index: 0, New: h}}, Size: 1}); err != nil {
		t.Fatal(err)
	}
	_, err = c.Commit(ctx, meta.CommitReq{Ino: f.Ino, Changes: []meta.BlockChange{{Index: 0, New: h}}})
	var ce *meta.ConflictError
	if !errors.As(err, &ce) || !errors.Is(err, meta.ErrConflict) || len(ce.Current) != 1 || ce.Current[0].New != h || ce.Ino != f.Ino {
		t.Fatalf("stale commit: %#v, want a ConflictError with the current hash", err)
	}

	st.getattr = func(context.Context, meta.Ino) (meta.Inode, error) { return meta.Inode{}, errors.New("disk on fire") }
	_, err = c.GetAttr(ctx, 5)
	if !errors.Is(err, meta.ErrIO) || !strings.Contains(err.Error(), "disk on fire") {
		t.Fatalf("plain error: %v, want ErrIO with the server's message", err)
	}
	st.getattr = func(context.Context, meta.Ino) (meta.Inode, error) {
		return meta.Inode{}, fmt.Errorf("getattr: %w (%w)", meta.ErrCorrupt, meta.ErrIO)
	}
	_, err = c.GetAttr(ctx, 5)
	if !errors.Is(err, meta.ErrIO) || !errors.Is(err, meta.ErrCorrupt) {
		t.Fatalf("corruption: %v, want ErrIO and ErrCorrupt", err)
	}
}

func TestDialFailsFast(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, err = metarpc.Dial(addr, metarpc.DialOptions{})
	if err == nil || !errors.Is(err, meta.ErrIO) || !strings.Contains(err.Error(), addr) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("dial of nothing: %v, want one line with %s wrapping ErrIO", err, addr)
	}
	// Fast: it ended on the refusal, not on DialTimeout (or retries).
	if !strings.Contains(err.Error(), syscall.ECONNREFUSED.Error()) || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("dial of nothing: %v, want the refusal (ECONNREFUSED), not a timeout", err)
	}
	t.Logf("dial error: %v", err)
}

func TestReconnect(t *testing.T) {
	ctx := context.Background()
	svc := newService(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	done := make(chan error, 1)
	go func() { done <- metarpc.Serve(ln, svc, metarpc.ServeOptions{}) }()
	c := dial(t, addr)
	for range 8 { // dial every slot
		if _, err := c.GetAttr(ctx, meta.RootIno); err != nil {
			t.Fatal(err)
		}
	}
	ln.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		_, err := c.GetAttr(ctx, meta.RootIno)
		if !errors.Is(err, meta.ErrIO) || !strings.Contains(err.Error(), addr) {
			t.Fatalf("call %d with the server down: %v, want ErrIO naming %s", i, err, addr)
		}
	}
	ln, err = net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("cannot listen on %s again: %v", addr, err)
	}
	go func() { done <- metarpc.Serve(ln, svc, metarpc.ServeOptions{}) }()
	defer func() {
		ln.Close()
		<-done
	}()
	for i := range 8 {
		if _, err := c.GetAttr(ctx, meta.RootIno); err != nil {
			t.Fatalf("call %d after restart: %v", i, err)
		}
	}
}

func TestRestartWhileIdleIsTransparent(t *testing.T) {
	ctx := context.Background()
	svc := newService(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	done := make(chan error, 1)
	go func() { done <- metarpc.Serve(ln, svc, metarpc.ServeOptions{}) }()
	c := dial(t, addr)
	for range 4 {
		if _, err := c.GetAttr(ctx, meta.RootIno); err != nil {
			t.Fatal(err)
		}
	}
	ln.Close()
	<-done
	time.Sleep(50 * time.Millisecond) // let the client notice the hang-ups
	ln, err = net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("cannot listen on %s again: %v", addr, err)
	}
	go func() { done <- metarpc.Serve(ln, svc, metarpc.ServeOptions{}) }()
	defer func() {
		ln.Close()
		<-done
	}()
	for i := range 8 {
		if _, err := c.GetAttr(ctx, meta.RootIno); err != nil {
			t.Fatalf("call %d after an idle restart: %v", i, err)
		}
	}
}

func TestCallDeadline(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	var sawDeadline sync.Map
	st := &stub{API: newService(t), getattr: func(ctx context.Context, ino meta.Ino) (meta.Inode, error) {
		dl, ok := ctx.Deadline()
		sawDeadline.Store(ino, ok && time.Until(dl) > 0)
		if ino == 1 {
			return meta.Inode{}, nil
		}
		select {
		case <-ctx.Done():
		case <-release:
		}
		return meta.Inode{}, ctx.Err()
	}}
	c := dial(t, serve(t, st))
	if _, err := c.GetAttr(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	if v, _ := sawDeadline.Load(meta.Ino(1)); v != true {
		t.Error("server saw no deadline for a call without one: want the default")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := c.GetAttr(ctx, 2)
	if !errors.Is(err, meta.ErrIO) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("stuck call: %v, want ErrIO and DeadlineExceeded (its context's)", err)
	}
	if _, err := c.GetAttr(context.Background(), 1); err != nil {
		t.Fatalf("call after a timeout: %v", err)
	}
}

func TestConcurrentClients(t *testing.T) {
	ctx := context.Background()
	c := dial(t, serve(t, newService(t)))
	const workers, each = 8, 100
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := c.Create(ctx, meta.CreateReq{Parent: meta.RootIno, Name: fmt.Sprint("d", w), Mode: syscall.S_IFDIR | 0755})
			if err != nil {
				errs <- err
				return
			}
			for i := range each {
				if _, err := c.Create(ctx, meta.CreateReq{Parent: d.Ino, Name: fmt.Sprint(i), Mode: syscall.S_IFREG | 0644}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	st, err := c.StatFS(ctx)
	if err != nil || st.Files != 1+workers*(each+1) {
		t.Fatalf("statfs %+v %v", st, err)
	}
}

func TestWalkWithoutLister(t *testing.T) {
	ctx := context.Background()
	svc := newService(t)
	c := dial(t, serve(t, &stub{API: svc}))
	f, err := svc.Create(ctx, meta.CreateReq{Parent: meta.RootIno, Name: "f", Mode: syscall.S_IFREG | 0644})
	if err != nil {
		t.Fatal(err)
	}
	var cs []meta.BlockChange
	for i := range uint64(meta.WalkPage + 10) {
		cs = append(cs, meta.BlockChange{Index: i, New: block.Sum([]byte(fmt.Sprint(i)))})
	}
	for rest := cs; len(rest) > 0; { // a commit names at most MaxCommitBlocks
		k := min(len(rest), meta.MaxCommitBlocks)
		if _, err := svc.Commit(ctx, meta.CommitReq{Ino: f.Ino, Changes: rest[:k], Size: uint64(len(cs)) * meta.DefaultBlockSize}); err != nil {
			t.Fatal(err)
		}
		rest = rest[k:]
	}
	n := 0
	err = c.WalkBlocks(ctx, func(ino meta.Ino, idx uint64, h block.Hash) error {
		if ino != f.Ino || idx != uint64(n) || h != cs[n].New {
			return fmt.Errorf("entry %d: %d/%d", n, ino, idx)
		}
		n++
		return nil
	})
	if err != nil || n != len(cs) {
		t.Fatalf("walk: %v after %d entries, want %d", err, n, len(cs))
	}
}

// syncStub counts the Syncs that reach the service and fails them on demand.
type syncStub struct {
	meta.API
	syncs int
	err   error
}

func (s *syncStub) Sync(ctx context.Context) error {
	s.syncs++
	return s.err
}

func TestSyncOverRPC(t *testing.T) {
	ctx := context.Background()
	st := &syncStub{API: newService(t)}
	c := dial(t, serve(t, st))
	if err := c.Sync(ctx); err != nil || st.syncs != 1 {
		t.Fatalf("Sync = %v, %d reached the service; want nil, 1", err, st.syncs)
	}
	st.err = fmt.Errorf("fsync of the WAL: %w", meta.ErrIO)
	if err := c.Sync(ctx); !errors.Is(err, meta.ErrIO) {
		t.Fatalf("failed Sync = %v; want ErrIO", err)
	}
}
