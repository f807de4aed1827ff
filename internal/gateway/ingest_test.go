package gateway_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"tessera/internal/block"
	"tessera/internal/block/disk"
	"tessera/internal/client"
	"tessera/internal/gateway"
	"tessera/internal/kv/memkv"
	"tessera/internal/meta"
)

// env is a meta service, a disk block store and a client of them, with a
// file:// home in a temporary directory and a fileset "cache" over it.
type env struct {
	svc  *meta.Service
	data *client.Client
	home string
	root meta.Ino
	g    *gateway.Ingester
	st   block.Store // the block store every client of the env uses
}

func newEnv(t *testing.T, mode meta.FilesetMode) *env { return newEnvWith(t, mode, gateway.Options{}) }

// newEnvWith is newEnv with the Ingester's options (Chunk defaults to 100 KiB).
func newEnvWith(t *testing.T, mode meta.FilesetMode, opts gateway.Options) *env {
	return newEnvPrefetch(t, mode, "", opts)
}

// newEnvPrefetch is newEnvWith with the fileset's prefetch setting ("":
// the default).
func newEnvPrefetch(t *testing.T, mode meta.FilesetMode, prefetch string, opts gateway.Options) *env {
	t.Helper()
	ctx := context.Background()
	svc, err := meta.New(memkv.New(), meta.Options{BlockSize: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.RegisterServer(ctx, meta.Server{ID: "b0", Addr: "disk", State: meta.StateUp}); err != nil {
		t.Fatal(err)
	}
	st, err := disk.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(ctx, client.Config{Meta: svc, Dial: func(meta.Server) (block.Store, error) { return st, nil },
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	e := &env{svc: svc, data: c, home: filepath.Join(t.TempDir(), "home"), st: st}
	if err := os.MkdirAll(filepath.Join(e.home, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	d, err := svc.Create(ctx, meta.CreateReq{Parent: meta.RootIno, Name: "cache", Mode: syscall.S_IFDIR | 0o755, Excl: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.CreateFileset(ctx, meta.Fileset{Root: d.Ino, Home: "file://" + e.home, Mode: mode, ValidityLag: time.Minute, Prefetch: prefetch}); err != nil {
		t.Fatal(err)
	}
	e.root = d.Ino
	if opts.Chunk == 0 {
		opts.Chunk = 100 << 10
	}
	e.g = gateway.NewIngester(svc, c, opts)
	t.Cleanup(func() { e.g.Close() })
	return e
}

func (e *env) put(t *testing.T, name string, data []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(e.home, name), data, 0o640); err != nil {
		t.Fatal(err)
	}
}

func (e *env) read(t *testing.T, ino meta.Ino) []byte {
	t.Helper()
	ctx := context.Background()
	in, err := e.svc.GetAttr(ctx, ino)
	if err != nil {
		t.Fatal(err)
	}
	h, _, err := e.data.Open(ctx, in, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release(ctx)
	buf := make([]byte, in.Size+10)
	n, err := h.Read(ctx, 0, buf)
	if err != nil {
		t.Fatal(err)
	}
	return buf[:n]
}

func randBytes(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// TestListAndFetchServeWithHomeGone: a listing makes placeholders with
// home's attributes; a fetch stores the file's bytes through the data
// path; with home moved away, what was seen still lists and reads.
func TestListAndFetchServeWithHomeGone(t *testing.T) {
	e := newEnv(t, meta.ModeRO)
	ctx := context.Background()
	big := randBytes(1<<20+12345, 1)
	e.put(t, "big", big)
	small := []byte("small file")
	e.put(t, "d/small", small)
	if err := os.Symlink("big", filepath.Join(e.home, "link")); err != nil {
		t.Fatal(err)
	}
	root, err := e.g.ListDir(ctx, e.root)
	if err != nil {
		t.Fatal(err)
	}
	if root.Gateway.State != meta.CacheCached {
		t.Errorf("root after listing: %v", root.Gateway.State)
	}
	bi, err := e.svc.Lookup(ctx, e.root, "big")
	if err != nil {
		t.Fatal(err)
	}
	if bi.Size != uint64(len(big)) || bi.Mode != syscall.S_IFREG|0o640 || bi.Gateway.State != meta.CachePlaceholder {
		t.Fatalf("placeholder big: size %d mode %o %+v", bi.Size, bi.Mode, bi.Gateway)
	}
	if l, err := e.svc.Lookup(ctx, e.root, "link"); err != nil || l.Target != "big" {
		t.Errorf("link: %q, %v", l.Target, err)
	}
	d, err := e.svc.Lookup(ctx, e.root, "d")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.g.ListDir(ctx, d.Ino); err != nil {
		t.Fatal(err)
	}
	si, err := e.svc.Lookup(ctx, d.Ino, "small")
	if err != nil || si.Gateway.HomePath != "d/small" {
		t.Fatalf("d/small: %+v, %v", si.Gateway, err)
	}
	// Half of big, then the whole of both.
	half, err := e.g.Fetch(ctx, bi.Ino, 0, 300<<10)
	if err != nil || half.Gateway.State != meta.CachePartial {
		t.Fatalf("fetch of a range: %+v, %v", half.Gateway, err)
	}
	for _, ino := range []meta.Ino{bi.Ino, si.Ino} {
		out, err := e.g.Fetch(ctx, ino, 0, 1<<40)
		if err != nil || out.Gateway.State != meta.CacheCached {
			t.Fatalf("fetch of inode %d: %+v, %v", ino, out.Gateway, err)
		}
	}
	if bi2, _ := e.svc.GetAttr(ctx, bi.Ino); bi2.Mtime != bi.Mtime {
		t.Errorf("mtime after fetch %d, home's %d", bi2.Mtime, bi.Mtime)
	}
	if s := e.g.Stats(); s.Listings != 2 || s.BytesFetch < uint64(len(big)+len(small)) {
		t.Errorf("stats %+v", s)
	}
	if err := os.Rename(e.home, e.home+".away"); err != nil {
		t.Fatal(err)
	}
	if got := e.read(t, bi.Ino); !bytes.Equal(got, big) {
		t.Errorf("big with home gone: %d bytes, differ from home's %d", len(got), len(big))
	}
	if got := e.read(t, si.Ino); !bytes.Equal(got, small) {
		t.Errorf("small with home gone: %q", got)
	}
	ents, _, err := e.svc.ReadDir(ctx, e.root, "", 100, false)
	if err != nil || len(ents) != 3 {
		t.Errorf("listing with home gone: %d entries, %v", len(ents), err)
	}
	// A cached file needs no home: fetching it again is a no-op.
	if _, err := e.g.Fetch(ctx, bi.Ino, 0, 10); err != nil {
		t.Errorf("fetch of a cached file with home gone: %v", err)
	}
	// An uncached one names home's error.
	e2 := newEnv(t, meta.ModeRO)
	e2.put(t, "f", []byte("x"))
	if _, err := e2.g.ListDir(ctx, e2.root); err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(e2.home)
	f, _ := e2.svc.Lookup(ctx, e2.root, "f")
	if _, err := e2.g.Fetch(ctx, f.Ino, 0, 1); err == nil {
		t.Error("fetch with home gone succeeded")
	}
}

// TestLocalNameWins: in a local-update fileset a file created locally
// before its directory is listed keeps its content.
func TestLocalNameWins(t *testing.T) {
	e := newEnv(t, meta.ModeLU)
	ctx := context.Background()
	e.put(t, "f", []byte("home's"))
	mine, err := e.svc.Create(ctx, meta.CreateReq{Parent: e.root, Name: "f", Mode: syscall.S_IFREG | 0o600, Excl: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.g.ListDir(ctx, e.root); err != nil {
		t.Fatal(err)
	}
	f, err := e.svc.Lookup(ctx, e.root, "f")
	if err != nil || f.Ino != mine.Ino || f.Size != 0 {
		t.Errorf("f after listing: inode %d size %d, %v; want the local inode %d", f.Ino, f.Size, err, mine.Ino)
	}
	if f.Gateway == nil || f.Gateway.HomePath != "" || f.Gateway.State != meta.CacheCached || f.Gateway.Fileset != e.root {
		t.Errorf("section of a local file: %+v", f.Gateway)
	}
	if out, err := e.g.Fetch(ctx, f.Ino, 0, 10); err != nil || out.Size != 0 {
		t.Errorf("fetch of a local file: size %d, %v (want nothing fetched)", out.Size, err)
	}
	plain, err := e.svc.Create(ctx, meta.CreateReq{Parent: meta.RootIno, Name: "plain", Mode: syscall.S_IFREG | 0o600, Excl: true})
	if err != nil || plain.Gateway != nil {
		t.Fatalf("a file outside filesets: %+v, %v", plain.Gateway, err)
	}
	if _, err := e.g.Fetch(ctx, plain.Ino, 0, 10); !errors.Is(err, meta.ErrInvalid) {
		t.Errorf("fetch of a file in no fileset: %v, want ErrInvalid", err)
	}
}
