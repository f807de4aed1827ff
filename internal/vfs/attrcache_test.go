package vfs

import (
	"context"
	"syscall"
	"testing"
	"time"

	"tessera/internal/clock"
	"tessera/internal/meta"
)

// TestAttrCacheTrustsAsLongAsAKernelMay: GetAttrCached answers from what
// this FS fetched while the attributes may be trusted (a directory's for
// AttrTTL, a regular file's for its policy's CacheTTL while it is open in
// the shared handles; one not open is always asked for), sees a change
// made behind its back once that has passed (or at Invalidate), and its
// own changes at once.
func TestAttrCacheTrustsAsLongAsAKernelMay(t *testing.T) {
	fake := clock.NewFake(time.Unix(1_000_000, 0))
	v, svc := newFSWith(t, Options{AttrCache: true, Clock: fake}, "")
	ctx := context.Background()
	d := mk(t, v, alice, meta.RootIno, "d", syscall.S_IFDIR|0o755)
	f := mk(t, v, alice, d.Ino, "f", syscall.S_IFREG|0o644)
	closed := mk(t, v, alice, d.Ino, "closed", syscall.S_IFREG|0o644)
	if _, err := v.WriteAt(ctx, alice, f.Ino, 0, []byte("x"), false); err != nil { // f open in the shared handles
		t.Fatal(err)
	}
	mode := func(ino meta.Ino) uint32 {
		t.Helper()
		in, err := v.GetAttrCached(ctx, ino)
		if err != nil {
			t.Fatal(err)
		}
		return in.Mode &^ syscall.S_IFMT
	}
	mode(d.Ino)
	mode(f.Ino)
	mode(closed.Ino)
	// Changed behind the FS's back (another client).
	for _, ino := range []meta.Ino{d.Ino, f.Ino, closed.Ino} {
		if _, err := svc.SetAttr(ctx, ino, meta.SetAttrReq{Valid: meta.SetMode, Mode: 0o700}); err != nil {
			t.Fatal(err)
		}
	}
	if mode(d.Ino) != 0o755 || mode(f.Ino) != 0o644 {
		t.Fatalf("within the TTL: modes %o, %o; want what was fetched (the cache unused?)", mode(d.Ino), mode(f.Ino))
	}
	if m := mode(closed.Ino); m != 0o700 {
		t.Errorf("a file not open, within the TTL: mode %o, want the meta service's 0700", m)
	}
	fake.Advance(time.Second)
	if m := mode(d.Ino); m != 0o700 {
		t.Errorf("directory past AttrTTL: mode %o, want 0700", m)
	}
	if m := mode(f.Ino); m != 0o700 {
		t.Errorf("file past the session policy's 1 s: mode %o, want 0700", m)
	}

	// Invalidate: at once.
	if _, err := svc.SetAttr(ctx, f.Ino, meta.SetAttrReq{Valid: meta.SetMode, Mode: 0o640}); err != nil {
		t.Fatal(err)
	}
	v.Invalidate(f.Ino)
	if m := mode(f.Ino); m != 0o640 {
		t.Errorf("after Invalidate: mode %o, want 0640", m)
	}
	// Its own changes: at once.
	if _, err := v.SetAttr(ctx, alice, f.Ino, SetAttr{Valid: meta.SetMode, Mode: 0o600}); err != nil {
		t.Fatal(err)
	}
	if m := mode(f.Ino); m != 0o600 {
		t.Errorf("after its own chmod: mode %o, want 0600", m)
	}
	mk(t, v, alice, d.Ino, "g", syscall.S_IFREG|0o644)
	if in, err := v.GetAttrCached(ctx, d.Ino); err != nil || in.Mtime == d.Mtime && in.Ctime == d.Ctime && in.Change == d.Change {
		t.Errorf("directory after its own create: %+v, %v; want its new times", in.Attr, err)
	}
	if err := v.Unlink(ctx, alice, d.Ino, "f"); err != nil {
		t.Fatal(err)
	}
	if in, err := v.GetAttrCached(ctx, f.Ino); err == nil && in.Nlink != 0 {
		t.Errorf("file after its own unlink: nlink %d, want it gone", in.Nlink)
	}
}

// TestAttrCacheKeepsNothingUnderPosix: a coherent policy's files are
// never answered from the cache (their TTL is 0).
func TestAttrCacheKeepsNothingUnderPosix(t *testing.T) {
	fake := clock.NewFake(time.Unix(1_000_000, 0))
	v, svc := newFSWith(t, Options{AttrCache: true, Clock: fake}, "posix")
	ctx := context.Background()
	f := mk(t, v, alice, meta.RootIno, "f", syscall.S_IFREG|0o644)
	if _, err := v.GetAttrCached(ctx, f.Ino); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.SetAttr(ctx, f.Ino, meta.SetAttrReq{Valid: meta.SetMode, Mode: 0o600}); err != nil {
		t.Fatal(err)
	}
	if in, err := v.GetAttrCached(ctx, f.Ino); err != nil || in.Mode&0o777 != 0o600 {
		t.Fatalf("under posix: mode %o (%v), want the meta service's 0600", in.Mode&0o777, err)
	}
}

// TestAttrCacheKeepsADirectorysIdentityAcrossItsEntries: after this FS
// adds or removes an entry of a directory, IdentityCached still answers
// its identity and permissions from the cache (not whole), while
// GetAttrCached asks for its new times.
func TestAttrCacheKeepsADirectorysIdentityAcrossItsEntries(t *testing.T) {
	fake := clock.NewFake(time.Unix(1_000_000, 0))
	v, svc := newFSWith(t, Options{AttrCache: true, Clock: fake}, "")
	ctx := context.Background()
	d := mk(t, v, alice, meta.RootIno, "d", syscall.S_IFDIR|0o755)
	if _, err := v.GetAttrCached(ctx, d.Ino); err != nil {
		t.Fatal(err)
	}
	mk(t, v, alice, d.Ino, "f", syscall.S_IFREG|0o644)
	// Behind the FS's back: the cache, not the meta service, answers
	// the identity check.
	if _, err := svc.SetAttr(ctx, d.Ino, meta.SetAttrReq{Valid: meta.SetMode, Mode: 0o700}); err != nil {
		t.Fatal(err)
	}
	in, whole, err := v.IdentityCached(ctx, d.Ino)
	if err != nil || whole || in.Mode&0o777 != 0o755 {
		t.Fatalf("identity after its own create: mode %o, whole %v, %v; want the cached 0755, not whole", in.Mode&0o777, whole, err)
	}
	full, err := v.GetAttrCached(ctx, d.Ino)
	if err != nil || full.Mode&0o777 != 0o700 {
		t.Fatalf("GetAttrCached after its own create: mode %o, %v; want the meta service's 0700", full.Mode&0o777, err)
	}
	if err := v.Unlink(ctx, alice, d.Ino, "f"); err != nil {
		t.Fatal(err)
	}
	if _, whole, _ := v.IdentityCached(ctx, d.Ino); whole {
		t.Error("identity after its own unlink: whole, want only the identity")
	}
	fake.Advance(time.Second)
	if in, whole, err := v.IdentityCached(ctx, d.Ino); err != nil || !whole || in.Mode&0o777 != 0o700 {
		t.Errorf("identity past the TTL: mode %o, whole %v, %v; want fetched, whole", in.Mode&0o777, whole, err)
	}
}
