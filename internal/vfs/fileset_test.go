package vfs_test

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

	"tessera/internal/block"
	"tessera/internal/block/disk"
	"tessera/internal/client"
	"tessera/internal/gateway"
	"tessera/internal/kv/memkv"
	"tessera/internal/meta"
	"tessera/internal/vfs"
)

const testBS = 64 << 10

// countingGateway records the fetches asked for, in blocks. It reads
// fileset settings through the Group, as a mount's gateway does.
type countingGateway struct {
	*gateway.Group
	mu      sync.Mutex
	fetches []meta.BlockRange
}

func (g *countingGateway) Fetch(ctx context.Context, ino meta.Ino, off, n int64) (meta.Inode, error) {
	g.mu.Lock()
	g.fetches = append(g.fetches, meta.BlockRange{First: uint64(off / testBS), End: uint64((off + n + testBS - 1) / testBS)})
	g.mu.Unlock()
	return g.Group.Fetch(ctx, ino, off, n)
}

func (g *countingGateway) got() []meta.BlockRange {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]meta.BlockRange(nil), g.fetches...)
}

// filesetFS is a vfs with a real gateway (an ingester over a file://
// home) in front of a fileset of the given mode at /cache, over an
// in-memory meta service and a disk block store; home holds file f
// (4 MiB of random bytes), which it returns.
func filesetFS(t *testing.T, mode meta.FilesetMode) (*vfs.FS, *countingGateway, string, []byte) {
	t.Helper()
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
	if _, err := svc.RegisterServer(ctx, meta.Server{ID: "b0", Addr: "local", State: "up"}); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
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
	data := make([]byte, 4<<20)
	rand.NewChaCha8([32]byte{1}).Read(data)
	if err := os.WriteFile(filepath.Join(home, "f"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := svc.Create(ctx, meta.CreateReq{Parent: meta.RootIno, Name: "cache", Mode: syscall.S_IFDIR | 0o755, Excl: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.CreateFileset(ctx, meta.Fileset{Root: d.Ino, Home: "file://" + home, Mode: mode,
		ValidityLag: time.Hour, Prefetch: meta.PrefetchNone}); err != nil {
		t.Fatal(err)
	}
	grp := gateway.NewGroup(gateway.NewIngester(svc, gc, gateway.Options{}))
	gw := &countingGateway{Group: grp}
	v := vfs.New(c, vfs.Options{Logger: log, Gateway: gw})
	t.Cleanup(func() {
		v.Close()
		grp.Close()
		c.Close(context.Background())
		gc.Close(context.Background())
	})
	return v, gw, home, data
}

// lookupF fills /cache (listing it at home) and looks f up.
func lookupF(t *testing.T, v *vfs.FS) meta.Inode {
	t.Helper()
	ctx := context.Background()
	d, err := v.Lookup(ctx, vfs.Root, meta.RootIno, "cache")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.Fill(ctx, d.Ino); err != nil {
		t.Fatal(err)
	}
	f, err := v.Lookup(ctx, vfs.Root, d.Ino, "f")
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestFilesetReadsFetchOnlyMisses: the fileset rules at the vfs level. An
// open of a file not cached fetches nothing; a read fetches the one block
// it needs, a read of a cached block (also through another handle) none;
// with the file gone at home, a block never fetched is EIO and a cached
// one still reads. A read-only fileset refuses an open that may write and
// a truncate with EROFS, before fetching anything.
func TestFilesetReadsFetchOnlyMisses(t *testing.T) {
	v, gw, home, data := filesetFS(t, meta.ModeRO)
	ctx := context.Background()
	f := lookupF(t, v)
	_, err := v.OpenFile(ctx, vfs.Root, f.Ino, syscall.O_RDWR)
	if !errors.Is(err, syscall.EROFS) {
		t.Fatalf("write open in a read-only fileset: %v, want EROFS", err)
	}
	_, err = v.SetAttr(ctx, vfs.Root, f.Ino, vfs.SetAttr{Valid: meta.SetSize})
	if !errors.Is(err, syscall.EROFS) {
		t.Fatalf("truncate in a read-only fileset: %v, want EROFS", err)
	}
	o, err := v.OpenFile(ctx, vfs.Root, f.Ino, syscall.O_RDONLY)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Release(ctx, o.Fh)
	if n := len(gw.got()); n != 0 {
		t.Fatalf("opens asked for %d fetches, want none", n)
	}
	read := func(h *vfs.File, off int64, n int) error {
		buf := make([]byte, n)
		got, err := h.Read(ctx, off, buf)
		if err != nil {
			return err
		}
		if !bytes.Equal(buf[:got], data[off:off+int64(n)]) {
			t.Errorf("read of %d bytes at %d differs from home's", n, off)
		}
		return nil
	}
	const mid = 2<<20 + 4096
	if err := read(o.File, mid, 4096); err != nil {
		t.Fatal(err)
	}
	if got := gw.got(); len(got) != 1 || got[0] != (meta.BlockRange{First: mid / testBS, End: mid/testBS + 1}) {
		t.Fatalf("a 4 KiB read fetched %v; want its one block", got)
	}
	o2, err := v.OpenFile(ctx, vfs.Root, f.Ino, syscall.O_RDONLY)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Release(ctx, o2.Fh)
	if err := read(o2.File, mid+8192, 100); err != nil {
		t.Fatal(err)
	}
	if got := gw.got(); len(got) != 1 {
		t.Fatalf("a read of a cached block through another handle fetched: %v", got)
	}
	if err := os.Rename(filepath.Join(home, "f"), filepath.Join(home, "f.away")); err != nil {
		t.Fatal(err)
	}
	if err := read(o.File, 7*testBS, 100); !errors.Is(err, syscall.EIO) {
		t.Fatalf("a block never fetched, the file gone at home: %v, want EIO", err)
	}
	if err := read(o.File, mid+100, 100); err != nil {
		t.Fatalf("a cached block with the file gone at home: %v", err)
	}
}

// TestFilesetWriteOpenCompletesFile: in a fileset that takes local
// updates, an open that may write fetches the whole file first
// (write-back sends files whole), and what it writes reads back over
// home's bytes.
func TestFilesetWriteOpenCompletesFile(t *testing.T) {
	v, gw, _, data := filesetFS(t, meta.ModeLU)
	ctx := context.Background()
	f := lookupF(t, v)
	o, err := v.OpenFile(ctx, vfs.Root, f.Ino, syscall.O_RDWR)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Release(ctx, o.Fh)
	got := gw.got()
	whole := meta.BlockRange{First: 0, End: uint64(len(data) / testBS)}
	if len(got) != 1 || got[0] != whole {
		t.Fatalf("a write open fetched %v; want the whole file %v", got, whole)
	}
	if _, err := o.File.Write(ctx, 10, []byte("local")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	if _, err := o.File.Read(ctx, 0, buf); err != nil {
		t.Fatal(err)
	}
	want := append(append(append([]byte(nil), data[:10]...), "local"...), data[15:64]...)
	if !bytes.Equal(buf, want) {
		t.Fatal("read after a local write differs from home's bytes with the write over them")
	}
	if n := len(gw.got()); n != 1 {
		t.Fatalf("reads of a completed file fetched again: %v", gw.got())
	}
}

// TestFilesetStatelessIO: the stateless I/O (NFS's READ and WRITE) keeps
// the fileset rules too: a read of a file not cached fetches the block it
// needs (it read the recipe's zeros before), a write in a read-only
// fileset is EROFS, and a write in a fileset taking local updates
// completes the file first.
func TestFilesetStatelessIO(t *testing.T) {
	v, gw, _, data := filesetFS(t, meta.ModeRO)
	ctx := context.Background()
	f := lookupF(t, v)
	const off = 3*testBS + 7
	buf := make([]byte, 100)
	n, _, err := v.ReadAt(ctx, vfs.Root, f.Ino, off, buf)
	if err != nil || !bytes.Equal(buf[:n], data[off:off+100]) {
		t.Fatalf("stateless read of a block not cached: %d bytes, %v; want home's bytes", n, err)
	}
	if got := gw.got(); len(got) != 1 || got[0] != (meta.BlockRange{First: 3, End: 4}) {
		t.Fatalf("a stateless read fetched %v; want its one block", got)
	}
	_, err = v.WriteAt(ctx, vfs.Root, f.Ino, 0, []byte("x"), false)
	if !errors.Is(err, syscall.EROFS) {
		t.Fatalf("stateless write in a read-only fileset: %v, want EROFS", err)
	}

	v, gw, _, data = filesetFS(t, meta.ModeLU)
	f = lookupF(t, v)
	if _, err := v.WriteAt(ctx, vfs.Root, f.Ino, 5, []byte("local"), true); err != nil {
		t.Fatal(err)
	}
	if got := gw.got(); len(got) != 1 || got[0] != (meta.BlockRange{First: 0, End: uint64(len(data) / testBS)}) {
		t.Fatalf("a stateless write fetched %v; want the whole file first", got)
	}
	n, _, err = v.ReadAt(ctx, vfs.Root, f.Ino, 0, buf)
	want := append(append(append([]byte(nil), data[:5]...), "local"...), data[10:100]...)
	if err != nil || !bytes.Equal(buf[:n], want) {
		t.Fatalf("read after a stateless write: %d bytes, %v; want home's bytes with the write over them", n, err)
	}
}

// TestCreateNotesFilesetMembership: a file or symlink this mount creates
// outside any fileset is known as such from the create's reply (its first
// open asks the meta service nothing more: tar -d of an untarred tree,
// issue 28), while one created in a fileset is still filled as a fileset
// inode, and a directory is not noted (an admin may make it, empty, a
// fileset's root later); the set of inodes known to be in none is bounded
// (readyMax), starting afresh.
func TestCreateNotesFilesetMembership(t *testing.T) {
	v, _, _, _ := filesetFS(t, meta.ModeSW)
	ctx := context.Background()
	a, err := v.Create(ctx, vfs.Root, meta.CreateReq{Parent: meta.RootIno, Name: "a", Mode: syscall.S_IFREG | 0o644, Excl: true})
	if err != nil {
		t.Fatal(err)
	}
	l, err := v.Create(ctx, vfs.Root, meta.CreateReq{Parent: meta.RootIno, Name: "l", Mode: syscall.S_IFLNK | 0o777, Target: "a", Excl: true})
	if err != nil {
		t.Fatal(err)
	}
	b, err := v.CreateOpen(ctx, vfs.Root, meta.CreateReq{Parent: meta.RootIno, Name: "b", Mode: 0o644}, syscall.O_RDWR|syscall.O_CREAT)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Release(ctx, b.Fh)
	for _, ino := range []meta.Ino{a.Ino, l.Ino, b.Inode.Ino} {
		if !v.Ready(ino) {
			t.Errorf("inode %d created outside any fileset: not known as such", ino)
		}
		if in, err := v.Fill(ctx, ino); err != nil || in != nil {
			t.Errorf("Fill(%d) of a file in no fileset = %v, %v; want nil, nil", ino, in, err)
		}
	}
	d, err := v.Create(ctx, vfs.Root, meta.CreateReq{Parent: meta.RootIno, Name: "d", Mode: syscall.S_IFDIR | 0o755, Excl: true})
	if err != nil {
		t.Fatal(err)
	}
	if v.Ready(d.Ino) {
		t.Errorf("directory %d noted as in no fileset at its create: it may become a fileset's root", d.Ino)
	}
	lookupF(t, v) // fills /cache
	c, err := v.Lookup(ctx, vfs.Root, meta.RootIno, "cache")
	if err != nil {
		t.Fatal(err)
	}
	n, err := v.CreateOpen(ctx, vfs.Root, meta.CreateReq{Parent: c.Ino, Name: "n", Mode: 0o644}, syscall.O_RDWR|syscall.O_CREAT)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Release(ctx, n.Fh)
	if v.Ready(n.Inode.Ino) {
		t.Fatalf("inode %d created in a fileset: known as in none", n.Inode.Ino)
	}
	if in, err := v.Fill(ctx, n.Inode.Ino); err != nil || in == nil || in.Gateway == nil {
		t.Fatalf("Fill of a file created in a fileset = %v, %v; want its fileset inode", in, err)
	}
	// the bound: one inode past it starts the set afresh
	for i := range vfs.ReadyMax {
		v.AddReady(meta.Ino(1<<40 + i))
	}
	if v.Ready(a.Ino) {
		t.Errorf("after %d more inodes, the set still holds the first: not bounded", vfs.ReadyMax)
	}
}
