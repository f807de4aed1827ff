package client

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"sync"
	"syscall"
	"testing"
	"time"

	"tessera/internal/block"
	"tessera/internal/kv/memkv"
	"tessera/internal/meta"
)

// lossyCommits is the meta service as one client reaches it: the reply of
// its next commit is lost after the service applied it (apply) or before
// (!apply), and between runs while the reply is on its way. With eio, the
// service answers an I/O error instead (its store's answer was lost: the
// transaction may have been applied), which the client does not resend.
type lossyCommits struct {
	meta.API
	mu      sync.Mutex
	lose    bool
	apply   bool
	eio     bool
	between func()
}

func (l *lossyCommits) Commit(ctx context.Context, req meta.CommitReq) (meta.Inode, error) {
	l.mu.Lock()
	lose := l.lose
	l.lose = false
	l.mu.Unlock()
	if !lose {
		return l.API.Commit(ctx, req)
	}
	if l.apply {
		if _, err := l.API.Commit(ctx, req); err != nil {
			return meta.Inode{}, err
		}
	}
	if l.between != nil {
		l.between()
	}
	if l.eio {
		return meta.Inode{}, fmt.Errorf("commit: etcdserver: request timed out (%w)", meta.ErrIO)
	}
	return meta.Inode{}, fmt.Errorf("commit: connection reset (%w)", meta.ErrReplyLost)
}

// TestCommitWhoseReplyWasLostTakesEffectOnce: client A's O_SYNC write of a
// whole record is applied but its reply lost; before A hears anything, a
// reader sees A's record and client B overwrites it (O_SYNC, returned).
// A's write must not take effect a second time over B's: that would make
// readers see A's record, then B's, then A's again, which no order of the
// two writes explains (the chaos run's porcupine failure, issue 23). A may
// fail its write (it cannot tell whether it was applied: EIO), but the
// file must keep B's record. Where nobody wrote between, or the commit
// never reached the service, A's write succeeds and the file has A's
// record. The same when the service answers an I/O error for a commit it
// applied (A's write fails; its close commits again): never A's record
// over B's.
func TestCommitWhoseReplyWasLostTakesEffectOnce(t *testing.T) {
	for _, size := range []int{64, 64 << 10} {
		for _, tc := range []struct {
			name              string
			apply, other, eio bool
		}{
			{"applied, overwritten since", true, true, false},
			{"applied", true, false, false},
			{"not applied", false, false, false},
			{"applied, EIO, overwritten since", true, true, true},
			{"applied, EIO", true, false, true},
		} {
			t.Run(fmt.Sprintf("%d bytes, %s", size, tc.name), func(t *testing.T) {
				testLostCommitReply(t, size, tc.apply, tc.other, tc.eio)
			})
		}
	}
}

func testLostCommitReply(t *testing.T, size int, apply, other, eio bool) {
	ctx := context.Background()
	svc, err := meta.New(memkv.New(), meta.Options{BlockSize: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.RegisterServer(ctx, meta.Server{ID: "b0", Addr: "mem", State: "up"}); err != nil {
		t.Fatal(err)
	}
	st := &memStore{blocks: make(map[block.Hash][]byte)}
	newClient := func(api meta.API) *Client {
		c, err := New(ctx, Config{Meta: api, Dial: func(meta.Server) (block.Store, error) { return st, nil },
			Logger: slog.New(slog.DiscardHandler), MemCacheBytes: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close(context.Background()) })
		return c
	}
	lossy := &lossyCommits{API: svc}
	a, b := newClient(lossy), newClient(svc)
	record := func(c byte) []byte { return bytes.Repeat([]byte{c}, size) }
	ino := createFile(t, svc, "reg").Ino
	open := func(c *Client) *Handle { // as FUSE opens: on the inode as it is now
		in, err := svc.GetAttr(ctx, ino)
		if err != nil {
			t.Fatal(err)
		}
		h, _, err := c.Open(ctx, in, syscall.O_RDWR|syscall.O_SYNC)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	write := func(c *Client, data []byte) error {
		h := open(c)
		defer h.Release(ctx)
		_, err := h.Write(ctx, 0, data)
		return err
	}
	read := func() []byte {
		h := open(b)
		defer h.Release(ctx)
		buf := make([]byte, size+1)
		n, err := h.Read(ctx, 0, buf)
		if err != nil {
			t.Fatal(err)
		}
		return buf[:n]
	}
	if err := write(b, record('i')); err != nil {
		t.Fatal(err)
	}
	lossy.lose, lossy.apply, lossy.eio = true, apply, eio
	lossy.between = func() {
		if !other {
			return
		}
		if got := read(); !bytes.Equal(got, record('a')) {
			t.Errorf("while A's reply is lost, B reads %.8q..., want A's record", got)
		}
		if err := write(b, record('b')); err != nil {
			t.Errorf("B's write: %v", err)
		}
	}
	aerr := write(a, record('a'))
	want := record('a')
	if other {
		want = record('b')
	} else if aerr != nil && !eio {
		t.Fatalf("A's write whose reply was lost, nobody writing since: %v", aerr)
	}
	if got := read(); !bytes.Equal(got, want) {
		t.Fatalf("after A's write returned (%v), the file holds %.8q..., want %.8q...", aerr, got, want)
	}
}

// downCommits fails every commit as never having reached the meta service
// while down is set.
type downCommits struct {
	meta.API
	mu   sync.Mutex
	down bool
}

func (d *downCommits) Commit(ctx context.Context, req meta.CommitReq) (meta.Inode, error) {
	d.mu.Lock()
	down := d.down
	d.mu.Unlock()
	if down {
		return meta.Inode{}, fmt.Errorf("commit: connection refused (%w)", meta.ErrUnreachable)
	}
	return d.API.Commit(ctx, req)
}

// TestFailedSyncWriteIsNotReadBack: client A's O_SYNC write fails (its
// commit never reached the meta service), and A still has the file open
// on another descriptor (as a process that reopens it at once has, while
// the kernel releases the first). After client B's O_SYNC write of another
// record returned, a synchronized read on A must return B's record, not
// the bytes of A's failed write, which are in no committed version: a
// reader seeing them, and others B's, has no order of the writes to
// explain it.
func TestFailedSyncWriteIsNotReadBack(t *testing.T) {
	for _, size := range []int{64, 64 << 10} {
		t.Run(fmt.Sprintf("%d bytes", size), func(t *testing.T) { testFailedSyncWrite(t, size) })
	}
}

func testFailedSyncWrite(t *testing.T, size int) {
	ctx := context.Background()
	svc, err := meta.New(memkv.New(), meta.Options{BlockSize: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.RegisterServer(ctx, meta.Server{ID: "b0", Addr: "mem", State: "up"}); err != nil {
		t.Fatal(err)
	}
	st := &memStore{blocks: make(map[block.Hash][]byte)}
	newClient := func(api meta.API) *Client {
		c, err := New(ctx, Config{Meta: api, Dial: func(meta.Server) (block.Store, error) { return st, nil },
			Logger: slog.New(slog.DiscardHandler), MemCacheBytes: 1 << 20, MetaTimeout: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close(context.Background()) })
		return c
	}
	down := &downCommits{API: svc}
	a, b := newClient(down), newClient(svc)
	record := func(c byte) []byte { return bytes.Repeat([]byte{c}, size) }
	ino := createFile(t, svc, "reg").Ino
	open := func(c *Client) *Handle {
		in, err := svc.GetAttr(ctx, ino)
		if err != nil {
			t.Fatal(err)
		}
		h, _, err := c.Open(ctx, in, syscall.O_RDWR|syscall.O_SYNC)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	hb := open(b)
	if _, err := hb.Write(ctx, 0, record('i')); err != nil {
		t.Fatal(err)
	}
	reader := open(a)
	defer reader.Release(ctx)
	down.down = true
	w := open(a)
	if _, err := w.Write(ctx, 0, record('p')); err == nil {
		t.Fatal("A's write succeeded with its meta service down")
	}
	w.Release(ctx) // fails too while the data is kept (before the fix)
	down.mu.Lock()
	down.down = false
	down.mu.Unlock()
	if _, err := hb.Write(ctx, 0, record('b')); err != nil {
		t.Fatal(err)
	}
	hb.Release(ctx)
	buf := make([]byte, size+1)
	n, err := reader.Read(ctx, 0, buf)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf[:n], record('b')) {
		t.Fatalf("A's synchronized read after B's write returned: %.8q..., want B's record", buf[:n])
	}
}
