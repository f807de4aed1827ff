package client

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"math/rand"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"tessera/internal/block"
	"tessera/internal/kv/memkv"
	"tessera/internal/logtest"
	"tessera/internal/meta"
)

// fullStore is a memStore whose disk can be made full: Puts then fail with
// block.ErrNoSpace, as a block server answers 507.
type fullStore struct {
	*memStore
	mu      sync.Mutex
	full    bool
	refused int
}

func (s *fullStore) setFull(full bool) {
	s.mu.Lock()
	s.full = full
	s.mu.Unlock()
}

func (s *fullStore) Put(ctx context.Context, h block.Hash, data []byte) error {
	s.mu.Lock()
	full := s.full
	if full {
		s.refused++
	}
	s.mu.Unlock()
	if full {
		return block.ErrNoSpace
	}
	return s.memStore.Put(ctx, h, data)
}

func (s *fullStore) refusals() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refused
}

// noSpaceEnv is a client over one fullStore with a dirty budget of four
// blocks, and a file to write.
func noSpaceEnv(t *testing.T, bs uint32) (*meta.Service, *fullStore, *Client, meta.Inode, *logtest.Buffer) {
	t.Helper()
	svc, err := meta.New(memkv.New(), meta.Options{BlockSize: bs})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.RegisterServer(context.Background(), meta.Server{ID: "b0", Addr: "mem", State: "up"}); err != nil {
		t.Fatal(err)
	}
	st := &fullStore{memStore: &memStore{blocks: make(map[block.Hash][]byte)}}
	logs := &logtest.Buffer{}
	c, err := New(context.Background(), Config{
		Meta:       svc,
		Dial:       func(meta.Server) (block.Store, error) { return st, nil },
		Logger:     slog.New(slog.NewTextHandler(logs, nil)),
		DirtyBytes: 4 * int64(bs),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return svc, st, c, createFile(t, svc, "f"), logs
}

// TestFullDiskFailsWrites: with the block store full, a writer that keeps
// writing gets ENOSPC from write itself (it does not wait forever for dirty
// budget that failed uploads hold), fsync says ENOSPC too, nothing is
// committed around the failed blocks, failed uploads are not retried in a
// hot loop nor logged once each, and once space is back the data the
// application was told was written commits whole.
func TestFullDiskFailsWrites(t *testing.T) {
	const bs = 64 << 10
	ctx := context.Background()
	svc, st, c, in, logs := noSpaceEnv(t, bs)
	h := open(t, c, in.Ino)
	rng := rand.New(rand.NewSource(1))
	st.setFull(true)
	var accepted []byte
	var werr error
	for i := 0; i < 200 && werr == nil; i++ {
		chunk := randBytes(rng, 16<<10)
		var n int
		n, werr = h.Write(ctx, int64(len(accepted)), chunk)
		accepted = append(accepted, chunk[:n]...)
	}
	if !errors.Is(werr, syscall.ENOSPC) {
		t.Fatalf("200 writes of 16 KiB onto a full store: last error %v; want ENOSPC", werr)
	}
	if err := h.Fsync(ctx); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("fsync on a full store: %v; want ENOSPC", err)
	}
	if got, _ := svc.GetAttr(ctx, in.Ino); got.Size != 0 {
		t.Fatalf("committed size %d after failed uploads; want 0 (nothing committed around them)", got.Size)
	}
	// Every block the writer filled was tried about once by the flusher
	// and once by the fsync, not over and over.
	blocks := (len(accepted) + bs - 1) / bs
	if n := st.refusals(); n > 3*blocks+4 {
		t.Fatalf("%d refused uploads for %d blocks written: the client retries a full disk in a loop", n, blocks)
	}
	if n := strings.Count(logs.String(), "block upload failed"); n > 2 {
		t.Fatalf("%d log lines for failed uploads; want them rate-limited:\n%s", n, logs.String())
	}
	st.setFull(false)
	if err := h.Fsync(ctx); err != nil {
		t.Fatalf("fsync once space is back: %v", err)
	}
	h.Release(ctx)
	got := readAt(t, open(t, c, in.Ino), len(accepted)+10)
	if !bytes.Equal(got, accepted) {
		t.Fatalf("read back %d bytes, want the %d accepted before the disk filled (first difference at %d)", len(got), len(accepted), firstDiff(got, accepted))
	}
}

// TestFullDiskLastCloseDrops: the last close of a file whose commit failed
// for lack of space reports it and drops the data (nobody is left to
// retry it); the file stays as last committed and the dirty budget is free
// for other writers.
func TestFullDiskLastCloseDrops(t *testing.T) {
	const bs = 64 << 10
	ctx := context.Background()
	svc, st, c, in, _ := noSpaceEnv(t, bs)
	h := open(t, c, in.Ino)
	write(t, h, 0, []byte("committed"))
	flush(t, h)
	st.setFull(true)
	h.Write(ctx, 0, bytes.Repeat([]byte{7}, 3*bs))
	if err := h.Flush(ctx); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("close on a full store: %v; want ENOSPC", err)
	}
	h.Release(ctx)
	// The uploads' goroutines give their budget back as they end.
	waitFor(t, func() bool { return c.budget.inUse() == 0 })
	st.setFull(false)
	if got, _ := svc.GetAttr(ctx, in.Ino); got.Size != uint64(len("committed")) {
		t.Fatalf("size %d; want the last committed %d", got.Size, len("committed"))
	}
	if got := readAt(t, open(t, c, in.Ino), 100); string(got) != "committed" {
		t.Fatalf("read back %q; want the last committed content", got)
	}
}

// stuckStore never finishes a Put until released.
type stuckStore struct {
	*memStore
	release chan struct{}
}

func (s *stuckStore) Put(ctx context.Context, h block.Hash, data []byte) error {
	<-s.release
	return s.memStore.Put(ctx, h, data)
}

// stuckClient is a client whose uploads never finish (until the test
// ends), with a dirty budget of two blocks of bs, and a file open on it.
func stuckClient(t *testing.T, bs uint32) (*Client, *Handle) {
	t.Helper()
	s := newShared(t, bs)
	st := &stuckStore{memStore: s.store, release: make(chan struct{})}
	c, err := New(context.Background(), Config{
		Meta:       s.api,
		Dial:       func(meta.Server) (block.Store, error) { return st, nil },
		Logger:     slog.New(slog.DiscardHandler),
		DirtyBytes: 2 * int64(bs),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	h := open(t, c, s.create(t, "f").Ino)
	// Registered last, run first: the uploads finish before the handle's
	// and the client's cleanups wait for them.
	t.Cleanup(func() { close(st.release) })
	return c, h
}

// TestInterruptEndsWaits: a writer waiting for dirty budget (its uploads
// hang) and a commit waiting for uploads both end with EINTR when their
// request is interrupted (the kernel's FUSE INTERRUPT: the process got a
// signal, SIGKILL included), instead of leaving the process in state D.
func TestInterruptEndsWaits(t *testing.T) {
	const bs = 64 << 10
	c, h := stuckClient(t, bs)

	intr := make(chan struct{})
	ctx := WithInterrupt(context.Background(), intr, nil)
	done := make(chan error, 1)
	data := randBytes(rand.New(rand.NewSource(2)), 10*bs)
	go func() {
		var err error
		for i := 0; i < 10 && err == nil; i++ {
			_, err = h.Write(ctx, int64(i)*bs, data[i*bs:(i+1)*bs])
		}
		done <- err
	}()
	waitFor(t, func() bool { return c.budget.inUse() >= 2*bs })
	close(intr)
	if err := <-done; !errors.Is(err, syscall.EINTR) {
		t.Fatalf("interrupted write waiting for budget: %v; want EINTR", err)
	}
	intr2 := make(chan struct{})
	ctx2 := WithInterrupt(context.Background(), intr2, nil)
	go func() { done <- h.Fsync(ctx2) }()
	close(intr2)
	if err := <-done; !errors.Is(err, syscall.EINTR) {
		t.Fatalf("interrupted fsync waiting for uploads: %v; want EINTR", err)
	}
}

// TestInterruptOfLivingCallerIgnored: an interrupt whose caller handles the
// signal (not dying) does not end the wait; once the caller is dying, it
// does, without a second interrupt.
func TestInterruptOfLivingCallerIgnored(t *testing.T) {
	const bs = 64 << 10
	c, h := stuckClient(t, bs)
	var dying atomic.Bool
	intr := make(chan struct{})
	ctx := WithInterrupt(context.Background(), intr, dying.Load)
	data := randBytes(rand.New(rand.NewSource(4)), 10*bs)
	var writes atomic.Int32
	done := make(chan error, 1)
	go func() {
		var err error
		for i := 0; i < 10 && err == nil; i++ {
			_, err = h.Write(ctx, int64(i)*bs, data[i*bs:(i+1)*bs])
			writes.Add(1)
		}
		done <- err
	}()
	waitFor(t, func() bool { return c.budget.inUse() >= 2*bs })
	close(intr) // a signal the caller handles
	select {
	case err := <-done:
		t.Fatalf("the write ended (%v) on an interrupt whose caller is not dying", err)
	case <-time.After(3 * interruptPoll):
	}
	dying.Store(true)
	if err := <-done; !errors.Is(err, syscall.EINTR) {
		t.Fatalf("write once the caller is dying: %v; want EINTR", err)
	}
}
