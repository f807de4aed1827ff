package disk_test

import (
	"os"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"tessera/internal/block"
	"tessera/internal/block/blocktest"
	"tessera/internal/block/disk"
)

// resident returns how many of the pages of file name are in the page
// cache (mincore of a shared mapping of it).
func resident(t *testing.T, name string) (in, pages int) {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	m, err := unix.Mmap(int(f.Fd()), 0, int(fi.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	ps := os.Getpagesize()
	vec := make([]byte, (len(m)+ps-1)/ps)
	if _, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		t.Fatal(e)
	}
	for _, v := range vec {
		if v&1 != 0 {
			in++
		}
	}
	return in, len(vec)
}

// pageCachedStore opens a store in a temporary directory whose file system
// keeps files apart from the page cache (not tmpfs, where the page cache
// is the store: the test is skipped).
func pageCachedStore(t *testing.T) *disk.Store {
	t.Helper()
	dir := t.TempDir()
	var sf unix.Statfs_t
	if err := unix.Statfs(dir, &sf); err != nil {
		t.Fatal(err)
	}
	if sf.Type == unix.TMPFS_MAGIC {
		t.Skip("tmpfs: the page cache is the store")
	}
	return open(t, dir)
}

// TestPutCachesRecentWritesOnly: a store leaves the pages of the blocks it
// wrote last in the page cache, up to its window (DefaultWriteCache), and
// drops those of older ones once they are durable. Before, every block
// stayed (and each Put copied its block into memory the machine had never
// touched: most of a block server's CPU per byte on the VM); and then every
// block was dropped at once, so that a read right after a write went to
// the disk. Blocks read back whole either way.
func TestPutCachesRecentWritesOnly(t *testing.T) {
	s := pageCachedStore(t)
	const size = 1<<20 + 123
	s.SetWriteCache(2*size + size/2) // two blocks
	var hs []block.Hash
	for i := range 5 {
		hs = append(hs, put(t, s, blocktest.Data(uint64(i+10), size)))
	}
	put(t, s, blocktest.Data(10, size)) // already present: no new write
	for i, h := range hs {
		in, pages := resident(t, s.Path(h))
		switch {
		case i < 3 && in != 0:
			t.Errorf("block %d of 5: %d of its %d pages still cached, want none (older than the window)", i, in, pages)
		case i >= 3 && in != pages:
			t.Errorf("block %d of 5: %d of its %d pages cached, want all (in the window)", i, in, pages)
		}
	}
	for i, h := range hs {
		got, err := s.Get(t.Context(), h)
		if err != nil || string(got) != string(blocktest.Data(uint64(i+10), size)) {
			t.Fatalf("get block %d: %d bytes, %v", i, len(got), err)
		}
	}
}

// TestWriteCacheZeroKeepsNone: with a window of 0 (--page-cache-window 0)
// every block's pages are dropped once it is durable; the blocks read
// back whole.
func TestWriteCacheZeroKeepsNone(t *testing.T) {
	s := pageCachedStore(t)
	s.SetWriteCache(0)
	data := blocktest.Data(7, 1<<20)
	h := put(t, s, data)
	if in, pages := resident(t, s.Path(h)); in != 0 {
		t.Errorf("%d of the block's %d pages cached with a window of 0, want none", in, pages)
	}
	if got, err := s.Get(t.Context(), h); err != nil || string(got) != string(data) {
		t.Fatalf("get: %d bytes, %v", len(got), err)
	}
}
