package pebblekv

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/vfs"

	"tessera/internal/kv"
)

// countingFS counts the real syncs of WAL files under a deferredFS.
type countingFS struct {
	vfs.FS
	syncs atomic.Int64
	fail  atomic.Bool
}

type countingFile struct {
	vfs.File
	fs *countingFS
}

func (c *countingFS) Create(name string) (vfs.File, error) {
	f, err := c.FS.Create(name)
	if err != nil || !isWAL(name) {
		return f, err
	}
	return &countingFile{File: f, fs: c}, nil
}

func (f *countingFile) SyncData() error {
	if f.fs.fail.Load() {
		return errors.New("injected fsync failure")
	}
	f.fs.syncs.Add(1)
	return f.File.SyncData()
}

func TestDeferredSyncs(t *testing.T) {
	ctx := context.Background()
	under := &countingFS{FS: vfs.Default}
	wal := newDeferredFS(under)
	s, err := open(t.TempDir(), Options{PipelinedSync: true, WALSyncEvery: time.Hour}, wal)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	base := under.syncs.Load()
	put := func() {
		t.Helper()
		if err := s.Update(ctx, func(tx kv.Txn) error { return tx.Put([]byte("k"), []byte("v")) }); err != nil {
			t.Fatal(err)
		}
	}
	for range 10 {
		put()
	}
	if n := under.syncs.Load() - base; n != 0 {
		t.Fatalf("%d real WAL syncs for 10 Updates; want 0 (deferred)", n)
	}
	if err := s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if n := under.syncs.Load() - base; n != 1 {
		t.Fatalf("%d real WAL syncs after Sync; want 1", n)
	}
	if err := s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if n := under.syncs.Load() - base; n != 1 {
		t.Fatalf("%d real WAL syncs after a Sync with nothing written; want still 1", n)
	}

	// A failed fsync fails every later Sync: the kernel may have dropped
	// the pages it could not write.
	put()
	under.fail.Store(true)
	if err := s.Sync(ctx); err == nil {
		t.Fatal("Sync after a failed fsync = nil")
	}
	under.fail.Store(false)
	put()
	if err := s.Sync(ctx); err == nil {
		t.Fatal("Sync after an earlier failed fsync = nil; want the failure again")
	}
}

func TestDeferredSyncEvery(t *testing.T) {
	under := &countingFS{FS: vfs.Default}
	s, err := open(t.TempDir(), Options{WALSyncEvery: 10 * time.Millisecond}, newDeferredFS(under))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	base := under.syncs.Load()
	if err := s.Update(context.Background(), func(tx kv.Txn) error { return tx.Put([]byte("k"), []byte("v")) }); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute) // for a hang only
	for under.syncs.Load() == base {
		if time.Now().After(deadline) {
			t.Fatal("no background WAL sync within a minute")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
