package fuse

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"tessera/internal/block"
	"tessera/internal/block/disk"
	"tessera/internal/client"
	"tessera/internal/kv/memkv"
	"tessera/internal/meta"
)

// mountForTest mounts a file system over an in-memory meta service and one
// on-disk block store (no HTTP), and unmounts it when the test ends.
func mountForTest(t *testing.T) string {
	t.Helper()
	return mountWith(t, Options{})
}

// mountWith is mountForTest with opts (its Logger set here).
func mountWith(t *testing.T, opts Options) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting needs root")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skip("no /dev/fuse")
	}
	ctx := context.Background()
	svc, err := meta.New(memkv.New(), meta.Options{BlockSize: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	st, err := disk.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	svc.RegisterServer(ctx, meta.Server{ID: "b0", Addr: "local", State: "up"})
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	c, err := client.New(ctx, client.Config{Meta: svc, Dial: func(meta.Server) (block.Store, error) { return st, nil }, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	mnt := t.TempDir()
	opts.Logger = log
	srv, err := Mount(New(c, opts), mnt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Unmount(); err != nil {
			t.Errorf("unmount %s: %v", mnt, err)
		}
		c.Close(context.Background())
	})
	return mnt
}

func TestMountSmoke(t *testing.T) {
	mnt := mountForTest(t)
	p := filepath.Join(mnt, "d", "f")
	if err := os.Mkdir(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("tessera "), 100000) // 800 kB, several blocks
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("read %d bytes back, want %d equal bytes", len(got), len(data))
	}
	ents, err := os.ReadDir(filepath.Dir(p))
	if err != nil || len(ents) != 1 || ents[0].Name() != "f" {
		t.Fatalf("readdir = %v, %v; want [f]", ents, err)
	}
	if err := os.Rename(p, p+"2"); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(p + "2"); err != nil {
		t.Fatal(err)
	}
}
