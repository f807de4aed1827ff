package pebblekv_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tessera/internal/kv"
	"tessera/internal/kv/kvtest"
	"tessera/internal/kv/pebblekv"
)

func opener(opts pebblekv.Options) kvtest.Opener {
	return func(t *testing.T, dir string) kv.Store {
		s, err := pebblekv.Open(dir, opts)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
}

func TestConformance(t *testing.T) {
	kvtest.RunDurable(t, opener(pebblekv.Options{}))
}

func TestConformancePipelined(t *testing.T) {
	kvtest.RunDurable(t, opener(pebblekv.Options{PipelinedSync: true}))
}

func TestOpenLocked(t *testing.T) {
	dir := t.TempDir()
	s, err := pebblekv.Open(dir, pebblekv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = pebblekv.Open(dir, pebblekv.Options{})
	if err == nil || !strings.Contains(err.Error(), dir) {
		t.Fatalf("second Open = %v; want an error naming %s", err, dir)
	}
}

func TestConformanceDeferredSync(t *testing.T) {
	kvtest.RunDurable(t, opener(pebblekv.Options{PipelinedSync: true, WALSyncEvery: time.Hour}))
}

// TestDeferredSyncSurvivesProcessCrash: with deferred WAL syncs an Update
// that returned is in the operating system's files, so a process killed
// right after (here: the directory copied as the OS holds it, the store
// never closed) keeps it; so does a Sync.
func TestDeferredSyncSurvivesProcessCrash(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := pebblekv.Open(dir, pebblekv.Options{PipelinedSync: true, WALSyncEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := range 100 {
		err := s.Update(ctx, func(tx kv.Txn) error {
			return tx.Put(fmt.Appendf(nil, "k%03d", i), []byte("v"))
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Update(ctx, func(tx kv.Txn) error { return tx.Put([]byte("after-sync"), []byte("v")) }); err != nil {
		t.Fatal(err)
	}

	crashed := filepath.Join(t.TempDir(), "copy")
	if err := os.CopyFS(crashed, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(crashed, "LOCK"))
	c, err := pebblekv.Open(crashed, pebblekv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	err = c.View(ctx, func(tx kv.Txn) error {
		for _, k := range []string{"k000", "k099", "after-sync"} {
			if _, ok, err := tx.Get([]byte(k)); err != nil || !ok {
				return fmt.Errorf("%s after a crash of the process: ok=%v err=%v", k, ok, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestSyncWithoutDeferral(t *testing.T) {
	s, err := pebblekv.Open(t.TempDir(), pebblekv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if err := s.Sync(context.Background()); !errors.Is(err, kv.ErrClosed) {
		t.Fatalf("Sync after Close = %v; want ErrClosed", err)
	}
}
