package disk_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"tessera/internal/block"
	"tessera/internal/block/blocktest"
	"tessera/internal/block/disk"
)

func open(t testing.TB, dir string) *disk.Store {
	t.Helper()
	s, err := disk.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	blocktest.Run(t, func(t *testing.T) block.Store { return open(t, t.TempDir()) })
}

func put(t *testing.T, s *disk.Store, data []byte) block.Hash {
	t.Helper()
	h := block.Sum(data)
	if err := s.Put(context.Background(), h, data); err != nil {
		t.Fatal(err)
	}
	return h
}

func TestLayout(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	h := put(t, s, []byte("layout"))
	x := h.String()
	want := filepath.Join(dir, "blocks", x[:2], x[2:4], x)
	if s.Path(h) != want {
		t.Fatalf("Path = %s, want %s", s.Path(h), want)
	}
	if got, err := os.ReadFile(want); err != nil || string(got) != "layout" {
		t.Fatalf("block file %s: %q, %v", want, got, err)
	}
}

func TestCorruptFileIsCaught(t *testing.T) {
	ctx := context.Background()
	s := open(t, t.TempDir())
	data := blocktest.Data(1, 4096)
	h := put(t, s, data)
	bad := bytes.Clone(data)
	bad[100] ^= 1
	if err := os.WriteFile(s.Path(h), bad, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := s.Get(ctx, h)
	if !errors.Is(err, block.ErrCorrupt) {
		t.Fatalf("Get of a corrupt file: %v, want ErrCorrupt", err)
	}
	if !strings.Contains(err.Error(), s.Path(h)) || !strings.Contains(err.Error(), h.String()) {
		t.Fatalf("error %q does not name the file %s and the block", err, s.Path(h))
	}
	// The corrupt copy was moved to quarantine: the block is absent, and a
	// Put of the good data (a repair) stores it afresh.
	if _, err := s.Get(ctx, h); !errors.Is(err, block.ErrNotFound) {
		t.Fatalf("Get after the corrupt copy was found: %v, want ErrNotFound", err)
	}
	if q, _ := filepath.Glob(filepath.Join(s.Dir(), "quarantine", h.String()+".*")); len(q) != 1 {
		t.Fatalf("quarantine holds %v; want the one corrupt file", q)
	}
	put(t, s, data)
	if got, err := s.Get(ctx, h); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("Get after repair: %v", err)
	}

	// OpenBlock(verify) finds corruption too; ranges are not verified
	// (documented).
	if err := os.WriteFile(s.Path(h), bad, 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := s.GetRange(ctx, h, 100, 1); err != nil || got[0] != bad[100] {
		t.Fatalf("GetRange: %v, %v", got, err)
	}
	if _, _, err := s.OpenBlock(ctx, h, true); !errors.Is(err, block.ErrCorrupt) {
		t.Fatalf("OpenBlock(verify) of a corrupt file: %v, want ErrCorrupt", err)
	}
}

func TestPutRepairsWrongSize(t *testing.T) {
	s := open(t, t.TempDir())
	data := blocktest.Data(2, 5000)
	h := put(t, s, data)
	if err := os.Truncate(s.Path(h), 100); err != nil {
		t.Fatal(err)
	}
	created, err := s.PutCreated(context.Background(), h, data)
	if err != nil || created {
		t.Fatalf("PutCreated over a damaged copy = %v, %v; want false, nil", created, err)
	}
	if got, err := s.Get(context.Background(), h); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("Get after repair: %d bytes, %v", len(got), err)
	}
	if b, n, _ := s.Usage(context.Background()); b != 1 || n != 5000 {
		t.Fatalf("Usage = %d, %d; want 1, 5000", b, n)
	}
}

// backdate sets the mtime of h's file, standing in for the passing of time.
func backdate(t *testing.T, s *disk.Store, h block.Hash, when time.Time) {
	t.Helper()
	if err := os.Chtimes(s.Path(h), when, when); err != nil {
		t.Fatal(err)
	}
}

func TestPutRefreshesMtime(t *testing.T) {
	ctx := context.Background()
	s := open(t, t.TempDir())
	data := []byte("refresh me")
	h := put(t, s, data)
	old := time.Now().Add(-time.Hour)
	backdate(t, s, h, old)
	created, err := s.PutCreated(ctx, h, data)
	if err != nil || created {
		t.Fatalf("second PutCreated = %v, %v; want false, nil", created, err)
	}
	info, err := s.Stat(ctx, h)
	if err != nil {
		t.Fatal(err)
	}
	if age := time.Since(time.Unix(0, info.ModTime)); age > time.Minute {
		t.Fatalf("mtime after Put is %v old: not refreshed", age)
	}
	// The gc's grace period now counts from the second Put.
	if removed, err := s.Remove(ctx, h, old.Add(time.Minute).UnixNano()); err != nil || removed {
		t.Fatalf("Remove with notAfter before the latest Put = %v, %v; want false", removed, err)
	}
}

// TestPutMtimeIsPrecise: a new block's mtime is not before the moment its
// Put began (the kernel's coarse file times lag the clock by up to a tick),
// so a removal whose cutoff was taken just before the Put spares it.
func TestPutMtimeIsPrecise(t *testing.T) {
	ctx := context.Background()
	s := open(t, t.TempDir())
	for i := range 50 {
		data := []byte(fmt.Sprintf("block %d", i))
		cutoff := time.Now().UnixNano()
		h := put(t, s, data)
		info, err := s.Stat(ctx, h)
		if err != nil {
			t.Fatal(err)
		}
		if removed, err := s.Remove(ctx, h, cutoff); err != nil || removed {
			t.Fatalf("Put %d: Remove with a cutoff taken before the Put = %v, %v; want false (mtime %d, cutoff %d)",
				i, removed, err, info.ModTime, cutoff)
		}
	}
}

func TestRemoveNotAfter(t *testing.T) {
	ctx := context.Background()
	s := open(t, t.TempDir())
	h := put(t, s, []byte("old"))
	when := time.Unix(1_700_000_000, 0)
	backdate(t, s, h, when)
	if removed, err := s.Remove(ctx, h, when.UnixNano()); err != nil || removed {
		t.Fatalf("Remove(notAfter = mtime) = %v, %v; want false", removed, err)
	}
	if removed, err := s.Remove(ctx, h, when.UnixNano()+1); err != nil || !removed {
		t.Fatalf("Remove(notAfter = mtime+1) = %v, %v; want true", removed, err)
	}
	if _, err := os.Stat(s.Path(h)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("block file still there: %v", err)
	}
}

func TestReopen(t *testing.T) {
	dir := t.TempDir()
	s, err := disk.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for i := range 5 {
		data := blocktest.Data(uint64(i), 1000+i)
		put(t, s, data)
		total += int64(len(data))
	}
	if _, err := disk.Open(dir); err == nil || !strings.Contains(err.Error(), dir) {
		t.Fatalf("second Open of an open store: %v; want an error naming %s", err, dir)
	}
	s.Close()

	// A crash leaves a temporary file and a stray name behind.
	if err := os.WriteFile(filepath.Join(dir, "tmp", "put-123"), []byte("half"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "blocks", "README"), []byte("not a block"), 0o644); err != nil {
		t.Fatal(err)
	}
	s = open(t, dir)
	if left, _ := os.ReadDir(filepath.Join(dir, "tmp")); len(left) != 0 {
		t.Fatalf("tmp/ after Open holds %d files, want none", len(left))
	}
	if b, n, _ := s.Usage(context.Background()); b != 5 || n != total {
		t.Fatalf("Usage after reopen = %d, %d; want 5, %d", b, n, total)
	}
}

func TestOpenFailureNamesDir(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(file, "store")
	_, err := disk.Open(dir)
	if err == nil || !strings.Contains(err.Error(), dir) {
		t.Fatalf("Open under a file: %v; want an error naming %s", err, dir)
	}
}

// tinyFS mounts a 1 MiB tmpfs for the test, or skips it.
func tinyFS(t *testing.T) string {
	dir := t.TempDir()
	if err := syscall.Mount("tessera-test", dir, "tmpfs", 0, "size=1m"); err != nil {
		t.Skipf("cannot mount a tmpfs (%v): skipping the out-of-space test", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

func TestNoSpace(t *testing.T) {
	dir := tinyFS(t)
	s := open(t, dir)
	ctx := context.Background()
	big := blocktest.Data(1, 2<<20)
	err := s.Put(ctx, block.Sum(big), big)
	if !errors.Is(err, block.ErrNoSpace) {
		t.Fatalf("Put of 2 MiB into 1 MiB: %v, want ErrNoSpace", err)
	}
	if left, _ := os.ReadDir(filepath.Join(dir, "tmp")); len(left) != 0 {
		t.Fatalf("tmp/ after ENOSPC holds %d files, want none", len(left))
	}
	if b, n, _ := s.Usage(ctx); b != 0 || n != 0 {
		t.Fatalf("Usage after a failed Put = %d, %d; want 0, 0", b, n)
	}
	small := []byte("still room for this")
	if err := s.Put(ctx, block.Sum(small), small); err != nil {
		t.Fatalf("small Put after ENOSPC: %v", err)
	}
}

func BenchmarkPut4MiB(b *testing.B) {
	s := open(b, b.TempDir())
	data := blocktest.Data(1, 4<<20)
	ctx := context.Background()
	b.SetBytes(int64(len(data)))
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		data[0], data[1], data[2], data[3] = byte(i), byte(i>>8), byte(i>>16), byte(i>>24)
		h := block.Sum(data)
		b.StartTimer()
		if err := s.Put(ctx, h, data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGet4MiB(b *testing.B) {
	s := open(b, b.TempDir())
	data := blocktest.Data(1, 4<<20)
	ctx := context.Background()
	h := block.Sum(data)
	if err := s.Put(ctx, h, data); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Get(ctx, h); err != nil {
			b.Fatal(err)
		}
	}
}

// allocNext is a server behind a LocalReader that reads into the caller's
// buffers; it serves one block.
type allocNext struct {
	block.Store
	data  []byte
	calls int
}

func (n *allocNext) GetAlloc(ctx context.Context, h block.Hash, alloc func(int) []byte) ([]byte, error) {
	n.calls++
	if h != block.Sum(n.data) {
		return nil, block.ErrNotFound
	}
	buf := alloc(len(n.data))
	if cap(buf) < len(n.data) {
		buf = make([]byte, len(n.data))
	}
	return append(buf[:0], n.data...), nil
}

// LocalReader.GetAlloc reads a block file into the caller's buffer, and
// asks the server for a block it has no file of, into the caller's buffer
// when the server can.
func TestLocalReaderGetAlloc(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	data := blocktest.Data(3, 200<<10)
	h := put(t, s, data)
	remote := blocktest.Data(4, 100<<10)
	next := &allocNext{Store: s, data: remote}
	lr := disk.NewLocalReader(dir, next, nil)
	if lr == nil {
		t.Fatal("no LocalReader for a block store's directory")
	}
	ctx := context.Background()
	mine := make([]byte, 300<<10)
	got, err := lr.GetAlloc(ctx, h, func(n int) []byte {
		if n != len(data) {
			t.Errorf("alloc(%d), want the block's %d bytes", n, len(data))
		}
		return mine
	})
	if err != nil || !bytes.Equal(got, data) || &got[0] != &mine[0] {
		t.Fatalf("GetAlloc of a local block: err %v, equal %v, into the buffer given %v", err, bytes.Equal(got, data), err == nil && &got[0] == &mine[0])
	}
	got, err = lr.GetAlloc(ctx, block.Sum(remote), func(int) []byte { return mine })
	if err != nil || !bytes.Equal(got, remote) || &got[0] != &mine[0] || next.calls != 1 {
		t.Fatalf("GetAlloc of a block with no file here: err %v, asked the server %d times", err, next.calls)
	}
	if got, err := lr.Get(ctx, h); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("Get: %v", err)
	}
}
