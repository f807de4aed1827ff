package fuse_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"tessera/internal/block"
	"tessera/internal/block/disk"
	"tessera/internal/client"
	"tessera/internal/fuse"
	"tessera/internal/gateway"
	"tessera/internal/kv/memkv"
	"tessera/internal/meta"
)

// countingGateway records the fetches a mount asks for.
type countingGateway struct {
	fuse.Gateway
	mu      sync.Mutex
	fetches []meta.BlockRange // in 64 KiB blocks
}

func (g *countingGateway) Fetch(ctx context.Context, ino meta.Ino, off, n int64) (meta.Inode, error) {
	g.mu.Lock()
	g.fetches = append(g.fetches, meta.BlockRange{First: uint64(off / testBS), End: uint64((off + n + testBS - 1) / testBS)})
	g.mu.Unlock()
	return g.Gateway.Fetch(ctx, ino, off, n)
}

func (g *countingGateway) count() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.fetches)
}

const testBS = 64 << 10

// TestPartialReadsAskOnlyForMisses: through a real mount of a fileset
// (prefetch none) over a file:// home, opening a file fetches nothing; a
// read asks the gateway for the one block it needs; reads of cached
// blocks (also through another open) never ask the gateway; a read of a
// block never fetched with the file gone at home fails with EIO.
func TestPartialReadsAskOnlyForMisses(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting needs root")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skip("no /dev/fuse")
	}
	ctx := context.Background()
	svc, err := meta.New(memkv.New(), meta.Options{BlockSize: testBS})
	if err != nil {
		t.Fatal(err)
	}
	st, err := disk.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	svc.RegisterServer(ctx, meta.Server{ID: "b0", Addr: "local", State: "up"})
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	dial := func(meta.Server) (block.Store, error) { return st, nil }
	c, err := client.New(ctx, client.Config{Meta: svc, Dial: dial, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	gc, err := client.New(ctx, client.Config{Meta: svc, Dial: dial, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	const size = 4 << 20
	data := make([]byte, size)
	rand.NewChaCha8([32]byte{1}).Read(data)
	if err := os.WriteFile(filepath.Join(home, "f"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := svc.Create(ctx, meta.CreateReq{Parent: meta.RootIno, Name: "cache", Mode: syscall.S_IFDIR | 0o755, Excl: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.CreateFileset(ctx, meta.Fileset{Root: d.Ino, Home: "file://" + home, Mode: meta.ModeRO,
		ValidityLag: time.Hour, Prefetch: meta.PrefetchNone}); err != nil {
		t.Fatal(err)
	}
	grp := gateway.NewGroup(gateway.NewIngester(svc, gc, gateway.Options{}))
	gw := &countingGateway{Gateway: grp}
	mnt := t.TempDir()
	srv, err := fuse.Mount(fuse.New(c, fuse.Options{Logger: log, Gateway: gw}), mnt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Unmount(); err != nil {
			t.Errorf("unmount %s: %v", mnt, err)
		}
		grp.Close()
		c.Close(context.Background())
		gc.Close(context.Background())
	})

	path := filepath.Join(mnt, "cache", "f")
	open := func() *os.File {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		// No kernel read-ahead: each read is the one FUSE read asked.
		if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_RANDOM); err != nil {
			t.Fatal(err)
		}
		return f
	}
	read := func(f *os.File, off int64, n int) error {
		buf := make([]byte, n)
		if _, err := f.ReadAt(buf, off); err != nil {
			return err
		}
		if !bytes.Equal(buf, data[off:off+int64(n)]) {
			t.Errorf("read of %d bytes at %d differs from home's", n, off)
		}
		return nil
	}
	f := open()
	if n := gw.count(); n != 0 {
		t.Fatalf("open asked the gateway %d times, want none", n)
	}
	const mid = size/2 + 4096
	if err := read(f, mid, 4096); err != nil {
		t.Fatal(err)
	}
	if n := gw.count(); n != 1 || gw.fetches[0] != (meta.BlockRange{First: mid / testBS, End: mid/testBS + 1}) {
		t.Fatalf("a 4 KiB read asked %v; want its one block", gw.fetches)
	}
	if err := read(f, mid+8192, 100); err != nil { // same block, another page
		t.Fatal(err)
	}
	if err := read(open(), mid+16384, 4096); err != nil { // another open
		t.Fatal(err)
	}
	if n := gw.count(); n != 1 {
		t.Errorf("reads of a cached block asked the gateway: %v", gw.fetches)
	}
	if err := read(f, 3*testBS+5, 100); err != nil {
		t.Fatal(err)
	}
	if n := gw.count(); n != 2 {
		t.Errorf("a read of another block: fetches %v, want a second", gw.fetches)
	}
	if err := os.Rename(filepath.Join(home, "f"), filepath.Join(home, "f.away")); err != nil {
		t.Fatal(err)
	}
	if err := read(f, 7*testBS, 100); !errors.Is(err, syscall.EIO) {
		t.Errorf("a read of a block never fetched, the file gone at home: %v, want EIO", err)
	}
	if err := read(f, mid+32768, 100); err != nil {
		t.Errorf("a cached block with the file gone at home: %v", err)
	}
}
