package meta

import (
	"context"
	"errors"
	"syscall"
	"testing"

	"tessera/internal/kv"
	"tessera/internal/kv/memkv"
)

// TestLookupWrongHint: a name hint is never trusted. Another Service
// sharing the store replaces the name (and removes another): Lookup
// through the first, whose hints name the old inodes, returns the new
// inode, and ErrNotFound for the name removed.
func TestLookupWrongHint(t *testing.T) {
	ctx := context.Background()
	inner := memkv.New()
	defer inner.Close()
	store := &opCounter{Store: inner} // reads several keys at once, as etcd: hints are kept
	a, err := New(store, Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(store, Options{})
	if err != nil {
		t.Fatal(err)
	}
	old, err := a.Create(ctx, CreateReq{Parent: RootIno, Name: "f", Mode: syscall.S_IFREG | 0o644, Excl: true})
	if err != nil {
		t.Fatal(err)
	}
	gone, err := a.Create(ctx, CreateReq{Parent: RootIno, Name: "g", Mode: syscall.S_IFREG | 0o644, Excl: true})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := a.Lookup(ctx, RootIno, "f"); err != nil || got.Ino != old.Ino {
		t.Fatalf("lookup f = %d, %v; want %d", got.Ino, err, old.Ino)
	}
	for _, name := range []string{"f", "g"} {
		if _, err := b.Unlink(ctx, RootIno, name, 0); err != nil {
			t.Fatal(err)
		}
	}
	repl, err := b.Create(ctx, CreateReq{Parent: RootIno, Name: "f", Mode: syscall.S_IFDIR | 0o755, Excl: true})
	if err != nil {
		t.Fatal(err)
	}
	if h, ok := a.hints.get(RootIno, "f"); !ok || h != old.Ino {
		t.Fatalf("the first Service's hint for f is %d, %v; want the old inode %d (the case under test)", h, ok, old.Ino)
	}
	got, err := a.Lookup(ctx, RootIno, "f")
	if err != nil || got.Ino != repl.Ino || !got.IsDir() {
		t.Fatalf("lookup f after it was replaced elsewhere = inode %d (dir %v), %v; want the new directory %d", got.Ino, got.IsDir(), err, repl.Ino)
	}
	if _, err := a.Lookup(ctx, RootIno, "g"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("lookup g (inode %d) after it was removed elsewhere: %v; want ErrNotFound", gone.Ino, err)
	}
}

// TestNoHintsWithoutMultiGet: on a store that reads key by key (memkv,
// Pebble) a hint saves no call, so creates and lookups keep none; with
// kv.GetMany (etcd; here the counting wrapper) they do.
func TestNoHintsWithoutMultiGet(t *testing.T) {
	ctx := context.Background()
	for _, multi := range []bool{false, true} {
		var store kv.Store = memkv.New()
		if multi {
			store = &opCounter{Store: store}
		}
		s, err := New(store, Options{})
		if err != nil {
			t.Fatal(err)
		}
		f, err := s.Create(ctx, CreateReq{Parent: RootIno, Name: "f", Mode: syscall.S_IFREG | 0o644, Excl: true})
		if err != nil {
			t.Fatal(err)
		}
		s.hints.drop(RootIno, "f")
		if got, err := s.Lookup(ctx, RootIno, "f"); err != nil || got.Ino != f.Ino {
			t.Fatalf("multi %v: lookup f = %d, %v; want %d", multi, got.Ino, err, f.Ino)
		}
		if _, err := s.Lookup(ctx, RootIno, "g"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("multi %v: lookup of a missing name: %v; want ErrNotFound", multi, err)
		}
		if _, err := s.Create(ctx, CreateReq{Parent: RootIno, Name: "h", Mode: syscall.S_IFREG | 0o644, Excl: true}); err != nil {
			t.Fatal(err)
		}
		s.hints.mu.Lock()
		n := len(s.hints.m)
		s.hints.mu.Unlock()
		if want := map[bool]int{false: 0, true: 2}[multi]; n != want {
			t.Errorf("multi %v: %d hints kept after a lookup and a create; want %d", multi, n, want)
		}
		store.Close()
	}
}
