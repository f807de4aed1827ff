package boltkv_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	berrors "go.etcd.io/bbolt/errors"

	"tessera/internal/kv"
	"tessera/internal/kv/boltkv"
	"tessera/internal/kv/kvtest"
)

func opener(opts boltkv.Options) kvtest.Opener {
	return func(t *testing.T, dir string) kv.Store {
		s, err := boltkv.Open(filepath.Join(dir, "meta.db"), opts)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
}

func TestConformance(t *testing.T) {
	kvtest.RunDurable(t, opener(boltkv.Options{}))
}

func TestConformanceBatch(t *testing.T) {
	kvtest.RunDurable(t, opener(boltkv.Options{Batch: true, MaxBatchDelay: 200 * time.Microsecond}))
}

func TestOpenLocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "meta.db")
	s, err := boltkv.Open(path, boltkv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// bbolt's flock is per open file, so a second Open in this process
	// contends like another process would.
	_, err = boltkv.Open(path, boltkv.Options{LockTimeout: 50 * time.Millisecond})
	if !errors.Is(err, berrors.ErrTimeout) || !strings.Contains(err.Error(), path) {
		t.Fatalf("second Open = %v; want a timeout naming %s", err, path)
	}
}

func TestOpenBadPath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dir-not-file")
	if _, err := boltkv.Open(filepath.Join(path, "meta.db"), boltkv.Options{}); err != nil {
		t.Fatalf("Open in a missing directory: %v", err)
	}
	_, err := boltkv.Open(path, boltkv.Options{})
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("Open of a directory = %v; want an error naming %s", err, path)
	}
}
