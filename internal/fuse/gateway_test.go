package fuse_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
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

// mountableStore skips the test unless FUSE can be mounted here, and
// returns an in-memory meta service (blocks of testBS) with one disk
// block server, "b0", registered; the store closes at the test's end.
func mountableStore(t *testing.T) (*meta.Service, *disk.Store) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting needs root")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skip("no /dev/fuse")
	}
	svc, err := meta.New(memkv.New(), meta.Options{BlockSize: testBS})
	if err != nil {
		t.Fatal(err)
	}
	st, err := disk.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := svc.RegisterServer(context.Background(), meta.Server{ID: "b0", Addr: "local", State: "up"}); err != nil {
		t.Fatal(err)
	}
	return svc, st
}

// TestPartialReadsAskOnlyForMisses: through a real mount of a fileset
// (prefetch none) over a file:// home, opening a file fetches nothing; a
// read asks the gateway for the one block it needs; reads of cached
// blocks (also through another open) never ask the gateway; a read of a
// block never fetched with the file gone at home fails with EIO.
func TestPartialReadsAskOnlyForMisses(t *testing.T) {
	svc, st := mountableStore(t)
	ctx := context.Background()
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

// countingBlocks counts the blocks read from a store.
type countingBlocks struct {
	block.Store
	gets atomic.Int64
}

func (c *countingBlocks) Get(ctx context.Context, h block.Hash) ([]byte, error) {
	c.gets.Add(1)
	return c.Store.Get(ctx, h)
}

// watchedGateway records, when a revalidation is asked, how many blocks
// the mount had read meanwhile: it waits for the first (or a minute)
// before it asks the gateway, as a revalidation over a WAN waits for home.
type watchedGateway struct {
	*gateway.Group
	blocks *countingBlocks
	mu     sync.Mutex
	seen   []int64 // blocks read before each revalidation answered
}

func (g *watchedGateway) Revalidate(ctx context.Context, ino meta.Ino, force bool) (bool, error) {
	for end := time.Now().Add(time.Minute); g.blocks.gets.Load() == 0 && time.Now().Before(end); {
		time.Sleep(time.Millisecond)
	}
	g.mu.Lock()
	g.seen = append(g.seen, g.blocks.gets.Load())
	g.mu.Unlock()
	return g.Group.Revalidate(ctx, ino, force)
}

func (g *watchedGateway) revalidations() []int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]int64(nil), g.seen...)
}

// TestRevalidationWarmsCachedCopy: an open of a cached fileset file once
// its validity lag passed waits for home; meanwhile the mount fetches the
// first blocks of the cached copy (its read-ahead depth), which an
// unchanged file then reads from its cache. Within the lag the gateway is
// not asked. A file changed at home reads home's new bytes after the lag,
// whatever was warmed.
func TestRevalidationWarmsCachedCopy(t *testing.T) {
	svc, st := mountableStore(t)
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	blocks := &countingBlocks{Store: st}
	c, err := client.New(ctx, client.Config{Meta: svc, Dial: func(meta.Server) (block.Store, error) { return blocks, nil },
		Logger: log, ReadAheadBlocks: 4})
	if err != nil {
		t.Fatal(err)
	}
	gc, err := client.New(ctx, client.Config{Meta: svc, Dial: func(meta.Server) (block.Store, error) { return st, nil }, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	const size = 10 * testBS
	data := make([]byte, size)
	rand.NewChaCha8([32]byte{2}).Read(data)
	if err := os.WriteFile(filepath.Join(home, "f"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := svc.Create(ctx, meta.CreateReq{Parent: meta.RootIno, Name: "cache", Mode: syscall.S_IFDIR | 0o755, Excl: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.CreateFileset(ctx, meta.Fileset{Root: d.Ino, Home: "file://" + home, Mode: meta.ModeRO,
		ValidityLag: time.Minute, Prefetch: meta.PrefetchNone}); err != nil {
		t.Fatal(err)
	}
	clk := &fakeClock{t: time.Now()}
	grp := gateway.NewGroup(gateway.NewIngester(svc, gc, gateway.Options{Now: clk.Now}))
	gw := &watchedGateway{Group: grp, blocks: blocks}
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
	// Cached whole by the gateway (its own client): the mount has read
	// none of its blocks.
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
	f, err := svc.Lookup(ctx, d.Ino, "f")
	if err != nil {
		t.Fatal(err)
	}
	if in, err := grp.Fetch(ctx, f.Ino, 0, size); err != nil || in.Gateway.State != meta.CacheCached {
		t.Fatalf("fetch of f: %+v, %v", in.Gateway, err)
	}
	openClose := func() {
		t.Helper()
		fh, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		fh.Close()
	}
	openClose()
	if got := gw.revalidations(); len(got) != 0 || blocks.gets.Load() != 0 {
		t.Fatalf("an open within the lag: revalidations %v, %d blocks read; want none", got, blocks.gets.Load())
	}
	clk.Add(2 * time.Minute)
	openClose()
	if got := gw.revalidations(); len(got) != 1 || got[0] == 0 {
		t.Fatalf("an open after the lag: blocks read before each revalidation answered %v; want one revalidation, with blocks read", got)
	}
	if got := waitGets(blocks, 4); got != 4 {
		t.Errorf("the open after the lag warmed %d blocks; want the read-ahead depth, 4", got)
	}
	fh, err := os.Open(path) // within the lag again
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4*testBS)
	if _, err := io.ReadFull(fh, buf); err != nil || !bytes.Equal(buf, data[:len(buf)]) {
		t.Errorf("reading the warmed blocks: %v, or the bytes differ", err)
	}
	fh.Close()
	// Home changes; after the lag the new bytes are read.
	v2 := make([]byte, size+100)
	rand.NewChaCha8([32]byte{3}).Read(v2)
	if err := os.WriteFile(filepath.Join(home, "f"), v2, 0o644); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(filepath.Join(home, "f"), later, later); err != nil {
		t.Fatal(err)
	}
	clk.Add(2 * time.Minute)
	got, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(got, v2) {
		t.Errorf("after home changed and the lag: %d bytes, %v; want home's new %d", len(got), err, len(v2))
	}
}

// waitGets waits until b has had want blocks read (or a minute) and
// returns how many it had.
func waitGets(b *countingBlocks, want int64) int64 {
	for end := time.Now().Add(time.Minute); b.gets.Load() < want && time.Now().Before(end); {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // and no more come
	return b.gets.Load()
}

// fakeClock is a gateway's injected clock.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}
