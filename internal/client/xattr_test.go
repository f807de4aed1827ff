package client

import (
	"context"
	"errors"
	"testing"
	"time"

	"tessera/internal/block"
	"tessera/internal/clock"
	"tessera/internal/kv/memkv"
	"tessera/internal/meta"
)

// xattrEnv is a meta service, a counting view of it and a client over
// that view whose mount policy is policy, on clk (nil: the real clock).
func xattrEnv(t *testing.T, policy string, clk clock.Clock) (*meta.Service, *countingMeta, *Client, meta.Inode) {
	t.Helper()
	svc, err := meta.New(memkv.New(), meta.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cm := &countingMeta{API: svc}
	c := testClient(t, cm, map[string]block.Store{}, Config{Policy: policy, Clock: clk})
	return svc, cm, c, createFile(t, svc, "f")
}

// getx reads xattr name of ino through c and checks the answer: want, or
// absent when want is nil.
func getx(t *testing.T, c *Client, ino meta.Ino, name string, want []byte) {
	t.Helper()
	v, err := c.GetXattr(context.Background(), ino, name)
	switch {
	case want == nil && !errors.Is(err, meta.ErrNoAttr):
		t.Fatalf("getxattr %s: %q, %v; want absent", name, v, err)
	case want != nil && (err != nil || string(v) != string(want)):
		t.Fatalf("getxattr %s: %q, %v; want %q", name, v, err, want)
	}
}

// TestXattrCachedWhileOpen: the security.capability read the kernel makes
// before every write is answered from the client while the file is open
// under a timed policy, for the policy's TTL; the client's own change, a
// new open and the TTL's end each make it ask again. The TTL runs on a fake
// clock: on the real one, a machine slow enough made the cached answer
// outlive the test's 1.1 s sleep, or the 50 reads outlast the TTL.
func TestXattrCachedWhileOpen(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(time.Now())
	svc, cm, c, in := xattrEnv(t, "session", clk) // attributes trusted 1 s
	const capName = "security.capability"

	getx(t, c, in.Ino, capName, nil)
	getx(t, c, in.Ino, capName, nil)
	if n := cm.getxattrs.Load(); n != 2 {
		t.Fatalf("file not open: %d getxattrs reached the service, want 2 (no cache)", n)
	}

	h, _, err := c.Open(ctx, in, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release(ctx)
	for range 50 {
		getx(t, c, in.Ino, capName, nil)
	}
	if n := cm.getxattrs.Load(); n != 3 {
		t.Fatalf("open file: %d getxattrs reached the service after 50 reads, want 3", n)
	}

	if err := c.SetXattr(ctx, in.Ino, "user.a", []byte("1"), 0); err != nil {
		t.Fatal(err)
	}
	getx(t, c, in.Ino, "user.a", []byte("1"))
	getx(t, c, in.Ino, capName, nil)
	if n := cm.getxattrs.Load(); n != 5 {
		t.Fatalf("after its own setxattr the client asked %d times in all, want 5 (both names again)", n)
	}

	// Another client's change is seen within the policy's TTL, as its
	// attributes would be.
	if err := svc.SetXattr(ctx, in.Ino, "user.a", []byte("2"), 0); err != nil {
		t.Fatal(err)
	}
	clk.Advance(900 * time.Millisecond)
	getx(t, c, in.Ino, "user.a", []byte("1"))
	clk.Advance(200 * time.Millisecond)
	getx(t, c, in.Ino, "user.a", []byte("2"))

	// A new open asks again at once (close-to-open).
	if err := svc.SetXattr(ctx, in.Ino, "user.a", []byte("3"), 0); err != nil {
		t.Fatal(err)
	}
	h2, _, err := c.Open(ctx, in, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer h2.Release(ctx)
	getx(t, c, in.Ino, "user.a", []byte("3"))

	if err := c.RemoveXattr(ctx, in.Ino, "user.a"); err != nil {
		t.Fatal(err)
	}
	getx(t, c, in.Ino, "user.a", nil)

	// The policy, set from elsewhere, is read fresh every time.
	for _, p := range []string{"relaxed", "nfs"} {
		if err := svc.SetXattr(ctx, in.Ino, meta.PolicyXattr, []byte(p), 0); err != nil {
			t.Fatal(err)
		}
		getx(t, c, in.Ino, meta.PolicyXattr, []byte(p))
	}
}

// TestXattrNotCachedCoherent: under a coherent policy every xattr read
// reaches the service, open or not.
func TestXattrNotCachedCoherent(t *testing.T) {
	ctx := context.Background()
	_, cm, c, in := xattrEnv(t, "posix", nil)
	h, _, err := c.Open(ctx, in, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release(ctx)
	for range 5 {
		getx(t, c, in.Ino, "security.capability", nil)
	}
	if n := cm.getxattrs.Load(); n != 5 {
		t.Fatalf("posix: %d of 5 getxattrs reached the service", n)
	}
}
