package client

import (
	"bytes"
	"context"
	"errors"
	"math/rand"
	"os"
	"testing"

	"tessera/internal/block"
	"tessera/internal/block/disk"
	"tessera/internal/kv/memkv"
	"tessera/internal/meta"
)

// Tests of reads from block files on this host (the co-located path): the
// client reads the segments a read needs from the block file, checks them
// against the segment sums it learned from verified content, and never
// returns bytes that do not match.

const localBS = 256 << 10

// localEnv is one client over one block store on this host; its memory
// cache holds a single block, so that reads go to the block files.
func localEnv(t *testing.T) (*meta.Service, *Client, *disk.Store) {
	t.Helper()
	ctx := context.Background()
	svc, err := meta.New(memkv.New(), meta.Options{BlockSize: localBS, Replicas: 1})
	if err != nil {
		t.Fatal(err)
	}
	st, err := disk.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := svc.RegisterServer(ctx, meta.Server{ID: "b0", Addr: "b0", Host: "h0", State: meta.StateUp}); err != nil {
		t.Fatal(err)
	}
	c := testClient(t, svc, map[string]*disk.Store{"b0": st}, Config{MemCacheBytes: localBS})
	return svc, c, st
}

// writeLocalFile writes a file of 4 blocks and a tail that is not a whole
// segment through c, closes it and returns its content.
func writeLocalFile(t *testing.T, svc *meta.Service, c *Client, name string, seed int64) (meta.Inode, []byte) {
	t.Helper()
	data := make([]byte, 4*localBS+1234)
	rand.New(rand.NewSource(seed)).Read(data)
	in := createFile(t, svc, name)
	h := open(t, c, in.Ino)
	write(t, h, 0, data)
	flush(t, h)
	return in, data
}

func readRange(t *testing.T, h *Handle, off int64, n int) ([]byte, error) {
	t.Helper()
	buf := make([]byte, n)
	m, err := h.Read(context.Background(), off, buf)
	return buf[:m], err
}

// TestColocatedReads: reads of every shape (whole pages as the kernel
// sends them, unaligned, across blocks, past the end) of a file this client
// wrote come from the block files, and match what was written.
func TestColocatedReads(t *testing.T) {
	svc, c, _ := localEnv(t)
	in, data := writeLocalFile(t, svc, c, "f", 1)
	h := open(t, c, in.Ino)
	size := int64(len(data))
	cases := []struct {
		off int64
		n   int
	}{
		{0, 4096}, {8192, 4096}, {localBS - 4096, 8192}, // pages, one across a block boundary
		{1, 10}, {4095, 2}, {5000, 70000}, {localBS - 7, 300}, // unaligned
		{3 * localBS, localBS}, {size - 1234, 4096}, {size - 10, 5}, // whole block, the tail
		{size - 100, 1 << 20}, {0, int(size) + 100}, // past the end
	}
	rng := rand.New(rand.NewSource(2))
	for range 200 {
		off := rng.Int63n(size/4096) * 4096
		cases = append(cases, struct {
			off int64
			n   int
		}{off, 4096 * (1 + rng.Intn(4))})
	}
	for _, tc := range cases {
		got, err := readRange(t, h, tc.off, tc.n)
		if err != nil {
			t.Fatalf("read %d+%d: %v", tc.off, tc.n, err)
		}
		want := data[tc.off:min(size, tc.off+int64(tc.n))]
		if !bytes.Equal(got, want) {
			t.Fatalf("read %d+%d: %d bytes, first difference at %d", tc.off, tc.n, len(got), firstDiff(got, want))
		}
	}
	if _, _, used := c.mem.stats(); used != 0 {
		t.Errorf("memory cache holds %d bytes; want the reads served from the block files", used)
	}
}

// TestColocatedSequentialRead: a sequential reader's read-ahead of blocks
// on this host (the kernel's page cache, not the process) and its reads
// return the file; so does a fresh client, which has no segment sums yet
// and verifies whole blocks first.
func TestColocatedSequentialRead(t *testing.T) {
	svc, c, st := localEnv(t)
	in, data := writeLocalFile(t, svc, c, "f", 3)
	for _, cl := range []*Client{c, testClient(t, svc, map[string]*disk.Store{"b0": st}, Config{MemCacheBytes: localBS})} {
		h := open(t, cl, in.Ino)
		var got []byte
		for off := int64(0); ; off += 128 << 10 {
			b, err := readRange(t, h, off, 128<<10)
			if err != nil {
				t.Fatal(err)
			}
			if len(b) == 0 {
				break
			}
			got = append(got, b...)
		}
		if !bytes.Equal(got, data) {
			t.Fatalf("sequential read: %d bytes, first difference at %d", len(got), firstDiff(got, data))
		}
	}
}

// TestColocatedChangedCopy: a block file changed after the client verified
// (and opened) it is never read as the block: the segment sums catch the
// change, the client verifies the whole copy, finds it corrupt, and the
// read fails (one copy) rather than return wrong bytes.
func TestColocatedChangedCopy(t *testing.T) {
	svc, c, st := localEnv(t)
	in, data := writeLocalFile(t, svc, c, "f", 4)
	h := open(t, c, in.Ino)
	if got, err := readRange(t, h, localBS+8192, 4096); err != nil || !bytes.Equal(got, data[localBS+8192:localBS+12288]) {
		t.Fatalf("read before the change: %v", err)
	}
	bh := block.Sum(data[localBS : 2*localBS])
	f, err := os.OpenFile(st.Path(bh), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte{data[localBS+9000] ^ 0xff}, 9000); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if got, err := readRange(t, h, localBS+8192, 4096); !errors.Is(err, block.ErrCorrupt) {
		t.Fatalf("read of the changed segment: %d bytes, err %v; want ErrCorrupt", len(got), err)
	}
	// The store moved the corrupt file aside: the block has no copy left.
	if got, err := readRange(t, h, localBS+100000, 4096); err == nil {
		t.Fatalf("read elsewhere in the changed block: %d bytes and no error", len(got))
	}
	// The other blocks still read.
	if got, err := readRange(t, h, 0, 4096); err != nil || !bytes.Equal(got, data[:4096]) {
		t.Fatalf("read of another block: %v", err)
	}
}

// TestLocalFileClosedUnderReader: a kept block file closed by an eviction
// between a reader's lookup and its pread is opened again.
func TestLocalFileClosedUnderReader(t *testing.T) {
	svc, c, _ := localEnv(t)
	in, data := writeLocalFile(t, svc, c, "f", 5)
	h := open(t, c, in.Ino)
	if _, err := readRange(t, h, 0, 4096); err != nil {
		t.Fatal(err)
	}
	bh := block.Sum(data[:localBS])
	f := c.files.get(bh)
	if f == nil {
		t.Fatal("block file not kept open after a read")
	}
	f.Close()
	got, err := readRange(t, h, 4096, 4096)
	if err != nil || !bytes.Equal(got, data[4096:8192]) {
		t.Fatalf("read after the close: %v", err)
	}
	if c.files.get(bh) == f {
		t.Fatal("the closed file is still kept")
	}
}

// TestLocalFilesBoundedAndIdle: past the bound the least recently read
// files are closed; a sweep closes the files not read in its last two
// periods.
func TestLocalFilesBoundedAndIdle(t *testing.T) {
	l := newLocalFiles()
	dir := t.TempDir()
	key := func(i int) block.Hash { return block.Sum([]byte{byte(i), byte(i >> 8)}) }
	var opened []*os.File
	for i := range maxLocalFiles + 1 {
		if i == maxLocalFiles {
			l.sweep() // a new tick, in which file 0 is read again
			if l.get(key(0)) == nil {
				t.Fatal("file 0 not kept")
			}
		}
		f, err := os.CreateTemp(dir, "")
		if err != nil {
			t.Fatal(err)
		}
		opened = append(opened, f)
		l.add(key(i), f)
	}
	closed := func() (n int) {
		for _, f := range opened {
			if _, err := f.Stat(); errors.Is(err, os.ErrClosed) {
				n++
			}
		}
		return n
	}
	if n := l.len(); n != maxLocalFiles*3/4 {
		t.Fatalf("%d files kept past the bound; want %d", n, maxLocalFiles*3/4)
	}
	if n := closed(); n != maxLocalFiles+1-maxLocalFiles*3/4 {
		t.Fatalf("%d files closed; want %d", n, maxLocalFiles+1-maxLocalFiles*3/4)
	}
	if l.get(key(0)) == nil || l.get(key(maxLocalFiles)) == nil {
		t.Fatal("a recently read or added file was closed")
	}
	l.sweep()
	if n := l.len(); n != maxLocalFiles*3/4 {
		t.Fatalf("%d files kept after a sweep; want all %d, read in the last two ticks", n, maxLocalFiles*3/4)
	}
	l.sweep()
	if n := l.len(); n != 2 {
		t.Fatalf("%d files kept after two sweeps; want the 2 read in the last two ticks", n)
	}
	l.sweep()
	if n := l.len(); n != 0 || closed() != len(opened) {
		t.Fatalf("%d files kept, %d of %d closed after idle sweeps", n, closed(), len(opened))
	}
}

func TestSegSums(t *testing.T) {
	data := make([]byte, 3*segSize+100)
	rand.New(rand.NewSource(6)).Read(data)
	h := block.Sum(data)
	s := newSegSums(1 << 20)
	s.learn(h, data)
	e, ok := s.get(h)
	if !ok {
		t.Fatal("sums not learned")
	}
	for _, tc := range []struct {
		from, n, off, end int64
		first             int
	}{
		{0, segSize, 0, segSize, 0},
		{segSize, 2 * segSize, segSize, 3 * segSize, 1},
		{1, 1, 0, segSize, 0},
		{segSize - 1, 2, 0, 2 * segSize, 0},
		{3*segSize + 50, 1000, 3 * segSize, 3*segSize + 100, 3},
	} {
		off, end, first := e.span(tc.from, tc.n)
		if off != tc.off || end != tc.end || first != tc.first {
			t.Errorf("span(%d, %d) = %d, %d, %d; want %d, %d, %d", tc.from, tc.n, off, end, first, tc.off, tc.end, tc.first)
		}
		if !e.check(data[off:end], first) {
			t.Errorf("check of [%d, %d) failed", off, end)
		}
		bad := bytes.Clone(data[off:end])
		bad[len(bad)-1] ^= 1
		if e.check(bad, first) {
			t.Errorf("check of a changed [%d, %d) passed", off, end)
		}
	}
	// Bounded in bytes: past the bound the least recently used entries go,
	// down to 3/4 of it.
	small := newSegSums(4 * (4*4 + sumEntryOverhead))
	var hs []block.Hash
	for i := range 5 {
		d := bytes.Repeat([]byte{byte(i + 1)}, 4*segSize)
		hs = append(hs, block.Sum(d))
		if i == 4 {
			small.get(hs[0]) // used again: kept
		}
		small.learn(hs[i], d)
	}
	for i, h := range hs {
		if _, ok := small.get(h); ok != (i == 0 || i >= 3) {
			t.Errorf("entry %d kept: %v", i, ok)
		}
	}
}

// TestSegSumsForgetReplacedVersions: the segment sums of a block's version
// this client replaced by uploading a newer one go with it. They stayed
// until the table's bound pushed them out: after fsx through tessera up
// (30,000 operations) 12 of the 26 MB the idle daemon held were sums of
// versions no file named any more.
func TestSegSumsForgetReplacedVersions(t *testing.T) {
	svc, c, _ := localEnv(t)
	in := createFile(t, svc, "f")
	h := open(t, c, in.Ino)
	rng := rand.New(rand.NewSource(9))
	data := make([]byte, 2*localBS)
	const versions = 20
	for range versions {
		rng.Read(data)
		write(t, h, 0, data)
		flush(t, h)
	}
	c.bg.Wait()
	if n := c.sums.len(); n > 2 {
		t.Fatalf("segment sums of %d blocks after %d versions of a 2-block file; want at most the 2 current ones", n, versions)
	}
	got, err := readRange(t, h, 0, len(data))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read back: %v, equal %v", err, bytes.Equal(got, data))
	}
}
