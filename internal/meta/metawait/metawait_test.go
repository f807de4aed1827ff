package metawait_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"syscall"
	"testing"
	"time"

	"tessera/internal/block"
	"tessera/internal/kv/memkv"
	"tessera/internal/meta"
	"tessera/internal/meta/metawait"
)

// fakeClock moves on by d at every After and fires at once, so that waits
// take no real time; Elapsed says how long they would have taken.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *fakeClock { return &fakeClock{now: time.Unix(1e9, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	ch := make(chan time.Time, 1)
	ch <- c.now
	return ch
}

func (c *fakeClock) Elapsed() time.Duration { return c.Now().Sub(time.Unix(1e9, 0)) }

// stuckClock's After never fires: only an interrupt or the context ends a
// wait.
type stuckClock struct{ fakeClock }

func (c *stuckClock) After(time.Duration) <-chan time.Time { return nil }

// flaky is a real meta service behind a switch: while down, calls fail
// with ErrUnreachable without reaching it; lose makes the next calls of an
// operation reach it and then lose their reply.
type flaky struct {
	meta.API
	mu    sync.Mutex
	down  int            // calls still to fail unreachable
	lose  map[string]int // op -> calls whose reply to lose
	calls map[string]int // op -> calls that reached the service
	// lost, when set, runs after a call whose reply is lost was applied.
	lost func()
}

func newFlaky(t *testing.T) *flaky {
	t.Helper()
	svc, err := meta.New(memkv.New(), meta.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return &flaky{API: svc, lose: map[string]int{}, calls: map[string]int{}}
}

// gate runs fn as op unless the service is down, losing its reply as told.
func (f *flaky) gate(op string, fn func() error) error {
	f.mu.Lock()
	if f.down > 0 {
		f.down--
		f.mu.Unlock()
		return fmt.Errorf("%s: connection refused (%w)", op, meta.ErrUnreachable)
	}
	f.calls[op]++
	lose := f.lose[op] > 0
	if lose {
		f.lose[op]--
	}
	f.mu.Unlock()
	err := fn()
	if lose && f.lost != nil {
		f.lost()
	}
	if lose {
		return fmt.Errorf("%s: connection reset (%w)", op, meta.ErrReplyLost)
	}
	return err
}

func (f *flaky) count(op string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[op]
}

func (f *flaky) GetAttr(ctx context.Context, ino meta.Ino) (out meta.Inode, err error) {
	err = f.gate("getattr", func() (err error) { out, err = f.API.GetAttr(ctx, ino); return err })
	return out, err
}

func (f *flaky) Lookup(ctx context.Context, p meta.Ino, name string) (out meta.Inode, err error) {
	err = f.gate("lookup", func() (err error) { out, err = f.API.Lookup(ctx, p, name); return err })
	return out, err
}

func (f *flaky) Create(ctx context.Context, req meta.CreateReq) (out meta.Inode, err error) {
	err = f.gate("create", func() (err error) { out, err = f.API.Create(ctx, req); return err })
	return out, err
}

func (f *flaky) Unlink(ctx context.Context, p meta.Ino, name string, reap meta.Ino) (out meta.Inode, err error) {
	err = f.gate("unlink", func() (err error) { out, err = f.API.Unlink(ctx, p, name, reap); return err })
	return out, err
}

func (f *flaky) Rename(ctx context.Context, op meta.Ino, on string, np meta.Ino, nn string, flags uint32) (out meta.Inode, err error) {
	err = f.gate("rename", func() (err error) { out, err = f.API.Rename(ctx, op, on, np, nn, flags); return err })
	return out, err
}

func (f *flaky) Rmdir(ctx context.Context, p meta.Ino, name string) error {
	return f.gate("rmdir", func() error { return f.API.Rmdir(ctx, p, name) })
}

func (f *flaky) Commit(ctx context.Context, req meta.CommitReq) (out meta.Inode, err error) {
	err = f.gate("commit", func() (err error) { out, err = f.API.Commit(ctx, req); return err })
	return out, err
}

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

func TestWaitsUntilTheServiceIsBack(t *testing.T) {
	f := newFlaky(t)
	clk := newClock()
	back := make(chan struct{}, 1)
	w := metawait.New(f, metawait.Options{Clock: clk, Logger: quiet(), OnBack: func() { back <- struct{}{} }})
	f.down = 20
	in, err := w.GetAttr(context.Background(), meta.RootIno)
	if err != nil {
		t.Fatalf("getattr across an outage: %v", err)
	}
	if in.Ino != meta.RootIno {
		t.Fatalf("getattr returned inode %d", in.Ino)
	}
	if f.count("getattr") != 1 || f.down != 0 {
		t.Fatalf("%d calls reached the service, %d outage calls left; want 1 and 0", f.count("getattr"), f.down)
	}
	if clk.Elapsed() == 0 {
		t.Fatal("the call did not wait between attempts")
	}
	<-back // OnBack was called
	if w.Down() {
		t.Fatal("Down after an answer")
	}
}

func TestTimeoutFailsWithEIO(t *testing.T) {
	f := newFlaky(t)
	clk := newClock()
	w := metawait.New(f, metawait.Options{Timeout: 2 * time.Second, Clock: clk, Logger: quiet()})
	f.down = 1 << 30
	_, err := w.GetAttr(context.Background(), meta.RootIno)
	if !errors.Is(err, syscall.EIO) {
		t.Fatalf("getattr in an outage past the timeout: %v, want EIO", err)
	}
	if e := clk.Elapsed(); e < 2*time.Second || e > 3*time.Second {
		t.Fatalf("gave up after %v of (fake) waiting, want 2 s", e)
	}
	if !w.Down() {
		t.Fatal("not Down during an outage")
	}
}

func TestDefaultTimeoutAndForever(t *testing.T) {
	f := newFlaky(t)
	clk := newClock()
	w := metawait.New(f, metawait.Options{Clock: clk, Logger: quiet()})
	f.down = 1 << 30
	if _, err := w.GetAttr(context.Background(), meta.RootIno); !errors.Is(err, syscall.EIO) {
		t.Fatalf("getattr: %v, want EIO", err)
	}
	if e := clk.Elapsed(); e < metawait.DefaultTimeout || e > metawait.DefaultTimeout+time.Second {
		t.Fatalf("default: gave up after %v, want %v", e, metawait.DefaultTimeout)
	}

	clk = newClock()
	w = metawait.New(f, metawait.Options{Timeout: -1, Clock: clk, Logger: quiet()})
	f.down = 5000 // over an hour of 1 s backoffs
	if _, err := w.GetAttr(context.Background(), meta.RootIno); err != nil {
		t.Fatalf("forever: %v", err)
	}
	if clk.Elapsed() < time.Hour {
		t.Fatalf("forever: waited only %v", clk.Elapsed())
	}
}

func TestInterruptEndsTheWait(t *testing.T) {
	f := newFlaky(t)
	intr := make(chan struct{})
	var mu sync.Mutex
	dying := false
	w := metawait.New(f, metawait.Options{Timeout: -1, Clock: &stuckClock{*newClock()}, Logger: quiet(),
		Interrupt: func(ctx context.Context) (<-chan struct{}, func() bool) {
			return intr, func() bool { mu.Lock(); defer mu.Unlock(); return dying }
		}})
	f.down = 1 << 30
	done := make(chan error, 1)
	go func() { _, err := w.GetAttr(context.Background(), meta.RootIno); done <- err }()
	select {
	case err := <-done:
		t.Fatalf("returned %v before any interrupt", err)
	case <-time.After(50 * time.Millisecond):
	}
	mu.Lock()
	dying = true
	mu.Unlock()
	close(intr)
	if err := <-done; !errors.Is(err, syscall.EINTR) {
		t.Fatalf("interrupted wait: %v, want EINTR", err)
	}
}

func TestInterruptOfALivingCallerWaitsOn(t *testing.T) {
	f := newFlaky(t)
	intr := make(chan struct{})
	close(intr) // a signal the caller handles (SIGURG)
	w := metawait.New(f, metawait.Options{Timeout: -1, Clock: newClock(), Logger: quiet(),
		Interrupt: func(ctx context.Context) (<-chan struct{}, func() bool) {
			return intr, func() bool { return false }
		}})
	f.down = 50
	if _, err := w.GetAttr(context.Background(), meta.RootIno); err != nil {
		t.Fatalf("getattr: %v", err)
	}
}

func TestCancelEndsTheWait(t *testing.T) {
	f := newFlaky(t)
	w := metawait.New(f, metawait.Options{Timeout: -1, Clock: &stuckClock{*newClock()}, Logger: quiet()})
	f.down = 1 << 30
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := w.GetAttr(ctx, meta.RootIno); done <- err }()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled wait: %v", err)
	}
}

func TestAnswersAreNotRetried(t *testing.T) {
	f := newFlaky(t)
	w := metawait.New(f, metawait.Options{Clock: newClock(), Logger: quiet()})
	if _, err := w.Lookup(context.Background(), meta.RootIno, "absent"); !errors.Is(err, meta.ErrNotFound) {
		t.Fatalf("lookup: %v, want ENOENT", err)
	}
	if n := f.count("lookup"); n != 1 {
		t.Fatalf("%d lookups sent, want 1", n)
	}
}

func TestNoWait(t *testing.T) {
	f := newFlaky(t)
	w := metawait.New(f, metawait.Options{Clock: newClock(), Logger: quiet()})
	f.down = 1
	ctx := metawait.NoWait(context.Background())
	if _, err := w.GetAttr(ctx, meta.RootIno); !meta.Unavailable(err) {
		t.Fatalf("no-wait getattr in an outage: %v", err)
	}
	// Known down: the next one is not even sent.
	if _, err := w.GetAttr(ctx, meta.RootIno); !meta.Unavailable(err) {
		t.Fatalf("second no-wait getattr: %v", err)
	}
	if n := f.count("getattr"); n != 0 {
		t.Fatalf("%d getattrs reached the service", n)
	}
	if _, err := w.GetAttr(context.Background(), meta.RootIno); err != nil {
		t.Fatal(err)
	}
	if _, err := w.GetAttr(ctx, meta.RootIno); err != nil {
		t.Fatalf("no-wait getattr once back: %v", err)
	}
}

func TestLostRepliesOfNonIdempotentCalls(t *testing.T) {
	ctx := context.Background()
	f := newFlaky(t)
	w := metawait.New(f, metawait.Options{Clock: newClock(), Logger: quiet()})

	// Create with Excl applied, reply lost: recognised, not EEXIST.
	f.lose["create"] = 1
	in, err := w.Create(ctx, meta.CreateReq{Parent: meta.RootIno, Name: "f", Mode: syscall.S_IFREG | 0640, Excl: true})
	if err != nil {
		t.Fatalf("exclusive create whose reply was lost: %v", err)
	}
	if in.Ino == 0 || in.Mode&0777 != 0640 || f.count("create") != 1 {
		t.Fatalf("create: inode %+v after %d creates", in.Attr, f.count("create"))
	}
	// Someone else's file of the same name is not taken for ours.
	f.lose["create"] = 1
	f.down = 0
	other, _ := f.API.Create(ctx, meta.CreateReq{Parent: meta.RootIno, Name: "g", Mode: syscall.S_IFREG | 0600})
	_ = other
	if _, err := w.Create(ctx, meta.CreateReq{Parent: meta.RootIno, Name: "g", Mode: syscall.S_IFREG | 0640, Excl: true}); !errors.Is(err, meta.ErrExist) {
		t.Fatalf("exclusive create over another's file: %v, want EEXIST", err)
	}

	// Mkdir: not idempotent either.
	f.lose["create"] = 1
	if _, err := w.Create(ctx, meta.CreateReq{Parent: meta.RootIno, Name: "d", Mode: syscall.S_IFDIR | 0755}); err != nil {
		t.Fatalf("mkdir whose reply was lost: %v", err)
	}

	// Unlink applied, reply lost: not ENOENT, and not sent twice.
	f.lose["unlink"] = 1
	before := f.count("unlink")
	out, err := w.Unlink(ctx, meta.RootIno, "f", in.Ino)
	if err != nil {
		t.Fatalf("unlink whose reply was lost: %v", err)
	}
	if out.Ino != in.Ino || out.Nlink != 0 || f.count("unlink") != before+1 {
		t.Fatalf("unlink: %+v after %d unlinks", out.Attr, f.count("unlink")-before)
	}

	// Rename applied, reply lost.
	f.lose["rename"] = 1
	if _, err := w.Rename(ctx, meta.RootIno, "g", meta.RootIno, "h", 0); err != nil {
		t.Fatalf("rename whose reply was lost: %v", err)
	}
	if _, err := f.API.Lookup(ctx, meta.RootIno, "h"); err != nil {
		t.Fatalf("after rename: %v", err)
	}

	// Exchange applied, reply lost: not swapped back.
	if _, err := f.API.Create(ctx, meta.CreateReq{Parent: meta.RootIno, Name: "x", Mode: syscall.S_IFREG | 0600}); err != nil {
		t.Fatal(err)
	}
	h0, _ := f.API.Lookup(ctx, meta.RootIno, "h")
	f.lose["rename"] = 1
	if _, err := w.Rename(ctx, meta.RootIno, "h", meta.RootIno, "x", meta.RenameExchange); err != nil {
		t.Fatalf("exchange whose reply was lost: %v", err)
	}
	if x, _ := f.API.Lookup(ctx, meta.RootIno, "x"); x.Ino != h0.Ino {
		t.Fatalf("after the exchange x is inode %d, want %d", x.Ino, h0.Ino)
	}

	// Rmdir applied, reply lost.
	f.lose["rmdir"] = 1
	if err := w.Rmdir(ctx, meta.RootIno, "d"); err != nil {
		t.Fatalf("rmdir whose reply was lost: %v", err)
	}

	// A lost reply that was not applied: the call is sent again.
	f.lose["unlink"] = 0
	f.down = 3
	if _, err := w.Unlink(ctx, meta.RootIno, "x", 0); err != nil {
		t.Fatalf("unlink across an outage: %v", err)
	}
	if _, err := f.API.Lookup(ctx, meta.RootIno, "x"); !errors.Is(err, meta.ErrNotFound) {
		t.Fatalf("x after unlink: %v", err)
	}
}

// TestCommitResentAfterALostReplyConflicts: a commit applied whose reply
// was lost is sent again, conflicts with itself and is answered as applied.
func TestCommitResentAfterALostReplyConflicts(t *testing.T) {
	ctx := context.Background()
	f := newFlaky(t)
	w := metawait.New(f, metawait.Options{Clock: newClock(), Logger: quiet()})
	in, err := w.Create(ctx, meta.CreateReq{Parent: meta.RootIno, Name: "f", Mode: syscall.S_IFREG | 0644})
	if err != nil {
		t.Fatal(err)
	}
	f.lose["commit"] = 1
	out, err := w.Commit(ctx, meta.CommitReq{Ino: in.Ino, Size: 3, Changes: []meta.BlockChange{
		{Index: 0, InlineNew: true, NewInline: []byte("abc")}}, Mtime: 1})
	if err != nil || out.Ino != in.Ino || out.Size != 3 {
		t.Fatalf("commit whose reply was lost: %+v, %v; want it answered as applied", out, err)
	}
	if f.count("commit") != 2 {
		t.Fatalf("%d commits sent, want 2", f.count("commit"))
	}
}

// TestWaitsDoubleToOneSecond: the waits between attempts start at 50 ms
// and double up to 1 s.
func TestWaitsDoubleToOneSecond(t *testing.T) {
	f := newFlaky(t)
	clk := newClock()
	w := metawait.New(f, metawait.Options{Clock: clk, Logger: quiet()})
	f.down = 8
	if _, err := w.GetAttr(context.Background(), meta.RootIno); err != nil {
		t.Fatalf("getattr across an outage: %v", err)
	}
	// 50 + 100 + 200 + 400 + 800 + 3 × 1000 ms.
	if e := clk.Elapsed(); e != 4550*time.Millisecond {
		t.Fatalf("8 failed attempts waited %v, want 4.55 s", e)
	}
}

// TestCommitOverwrittenBeforeItsResend: a commit applied whose reply was
// lost, then overwritten by another client before it is sent again, fails
// with ErrMaybeApplied (EIO), not with a conflict the caller would redo:
// the redo would apply it a second time, over the other client's write.
func TestCommitOverwrittenBeforeItsResend(t *testing.T) {
	ctx := context.Background()
	f := newFlaky(t)
	w := metawait.New(f, metawait.Options{Clock: newClock(), Logger: quiet()})
	in, err := w.Create(ctx, meta.CreateReq{Parent: meta.RootIno, Name: "f", Mode: syscall.S_IFREG | 0644})
	if err != nil {
		t.Fatal(err)
	}
	inline := func(s string, old block.Hash) meta.CommitReq {
		return meta.CommitReq{Ino: in.Ino, Size: uint64(len(s)), Changes: []meta.BlockChange{
			{Index: 0, Old: old, InlineNew: true, NewInline: []byte(s)}}, Mtime: 1}
	}
	f.lose["commit"] = 1
	other := make(chan error, 1)
	f.lost = func() { // before the resend, another client writes
		_, err := f.API.Commit(ctx, inline("xyz", block.Sum([]byte("abc"))))
		other <- err
	}
	_, err = w.Commit(ctx, inline("abc", block.Hash{}))
	if err := <-other; err != nil {
		t.Fatalf("the other client's commit: %v", err)
	}
	if !errors.Is(err, meta.ErrMaybeApplied) || !errors.Is(err, syscall.EIO) || errors.Is(err, meta.ErrConflict) {
		t.Fatalf("commit applied, overwritten, then sent again: %v; want ErrMaybeApplied (EIO), not a conflict", err)
	}
	r, err := f.API.GetRecipe(ctx, in.Ino, 0, 1)
	if err != nil || string(r.Inline) != "xyz" {
		t.Fatalf("the file holds %q (%v), want the other client's xyz", r.Inline, err)
	}
}
