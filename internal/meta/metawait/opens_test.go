package metawait_test

import (
	"context"
	"syscall"
	"testing"

	"tessera/internal/kv/memkv"
	"tessera/internal/meta"
	"tessera/internal/meta/metawait"
)

// The open registrations (HoldOpen, ReleaseOpen) follow the outage rules of
// the other calls: not reached, sent again; reply lost, HoldOpen sent again
// (an extra count at worst keeps the inode longer), ReleaseOpen taken as
// applied (sending it again could drop another handle's open).

func (f *flaky) HoldOpen(ctx context.Context, ino meta.Ino) (out meta.Inode, err error) {
	err = f.gate("holdopen", func() (err error) { out, err = f.API.HoldOpen(ctx, ino); return err })
	return out, err
}

func (f *flaky) ReleaseOpen(ctx context.Context, ino meta.Ino) error {
	return f.gate("releaseopen", func() error { return f.API.ReleaseOpen(ctx, ino) })
}

// sessionFlaky is flaky around a service bound to a session of its own (so
// that opens are counted), with one file made; opens reports the session's
// open count.
func sessionFlaky(t *testing.T) (f *flaky, ino meta.Ino, opens func() int) {
	t.Helper()
	ctx := context.Background()
	svc, err := meta.New(memkv.New(), meta.Options{})
	if err != nil {
		t.Fatal(err)
	}
	info, err := svc.OpenSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	in, err := svc.Create(ctx, meta.CreateReq{Parent: meta.RootIno, Name: "f", Mode: syscall.S_IFREG | 0o644, Excl: true})
	if err != nil {
		t.Fatal(err)
	}
	f = &flaky{API: svc.WithSession(info.ID), lose: map[string]int{}, calls: map[string]int{}}
	return f, in.Ino, func() int { return svc.LeaseStats().Opens }
}

func TestHoldOpenWaitsForTheService(t *testing.T) {
	f, ino, opens := sessionFlaky(t)
	w := metawait.New(f, metawait.Options{Clock: newClock(), Logger: quiet()})
	f.down = 5
	in, err := w.HoldOpen(context.Background(), ino)
	if err != nil {
		t.Fatalf("an open while the meta service is unreachable for a while: %v; want it to wait", err)
	}
	if in.Ino != ino || opens() != 1 {
		t.Fatalf("HoldOpen returned inode %d, the session holds %d opens; want %d and 1", in.Ino, opens(), ino)
	}
	f.down = 5
	if err := w.ReleaseOpen(context.Background(), ino); err != nil {
		t.Fatalf("a release while the meta service is unreachable for a while: %v; want it to wait", err)
	}
	if n := opens(); n != 0 {
		t.Fatalf("after the release the session holds %d opens, want 0", n)
	}
}

func TestHoldOpenReplyLostIsSentAgain(t *testing.T) {
	f, ino, opens := sessionFlaky(t)
	w := metawait.New(f, metawait.Options{Clock: newClock(), Logger: quiet()})
	f.lose["holdopen"] = 1
	in, err := w.HoldOpen(context.Background(), ino)
	if err != nil || in.Ino != ino {
		t.Fatalf("HoldOpen after a lost reply: %d, %v; want inode %d", in.Ino, err, ino)
	}
	if n := f.count("holdopen"); n != 2 {
		t.Fatalf("HoldOpen reached the service %d times, want 2 (sent again after the lost reply)", n)
	}
	// The session may count the open twice: the inode is kept longer,
	// never dropped early.
	if n := opens(); n < 1 {
		t.Fatalf("the session holds %d opens, want at least 1", n)
	}
}

func TestReleaseOpenReplyLostIsNotSentAgain(t *testing.T) {
	f, ino, opens := sessionFlaky(t)
	w := metawait.New(f, metawait.Options{Clock: newClock(), Logger: quiet()})
	ctx := context.Background()
	for range 2 { // two handles
		if _, err := w.HoldOpen(ctx, ino); err != nil {
			t.Fatal(err)
		}
	}
	f.lose["releaseopen"] = 1
	if err := w.ReleaseOpen(ctx, ino); err != nil {
		t.Fatalf("ReleaseOpen whose reply was lost: %v; want it taken as applied", err)
	}
	if n := f.count("releaseopen"); n != 1 {
		t.Fatalf("ReleaseOpen reached the service %d times, want 1 (a resend could drop the other handle's open)", n)
	}
	if n := opens(); n != 1 {
		t.Fatalf("the session holds %d opens, want the other handle's 1", n)
	}
}
