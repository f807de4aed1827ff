package disk_test

import (
	"os"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"tessera/internal/block/blocktest"
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

// TestPutLeavesNoPagesCached: a Put, once durable, drops the block's pages
// from the page cache (they stayed: every Put filled fresh page-cache memory,
// and on the benchmark machine copying a block into new pages was most of a
// block server's CPU per byte). The block still reads back whole.
func TestPutLeavesNoPagesCached(t *testing.T) {
	dir := t.TempDir()
	var sf unix.Statfs_t
	if err := unix.Statfs(dir, &sf); err != nil {
		t.Fatal(err)
	}
	if sf.Type == unix.TMPFS_MAGIC {
		t.Skip("tmpfs: the page cache is the store")
	}
	s := open(t, dir)
	data := blocktest.Data(7, 1<<20+123)
	h := put(t, s, data)
	if in, pages := resident(t, s.Path(h)); in != 0 {
		t.Fatalf("%d of the block's %d pages still cached after Put", in, pages)
	}
	got, err := s.Get(t.Context(), h)
	if err != nil || string(got) != string(data) {
		t.Fatalf("get after put: %d bytes, equal %v, %v", len(got), string(got) == string(data), err)
	}
}
