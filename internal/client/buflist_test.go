package client

import (
	"context"
	"testing"
	"unsafe"
)

func same(a, b []byte) bool { return unsafe.SliceData(a[:1]) == unsafe.SliceData(b[:1]) }

// TestBufListReusesAnyBlockSize: a buffer of a whole block is reused
// whatever the block size (only 4 MiB ones were: with the multi-site
// benchmark's 1 MiB blocks, every block allocated afresh); buffers grown
// to other sizes, and those beyond the byte bound, are not kept; drain
// empties the list.
func TestBufListReusesAnyBlockSize(t *testing.T) {
	for _, bs := range []int{1 << 20, 4 << 20, 512 << 10} {
		l := newBufList(8 << 20)
		b := l.get(bs)
		if cap(b) != bs || len(b) != 0 {
			t.Fatalf("get(%d): len %d cap %d", bs, len(b), cap(b))
		}
		l.put(append(b, 1))
		if c := l.get(bs); !same(c, b[:1]) || len(c) != 0 {
			t.Fatalf("block size %d: the buffer given back was not reused", bs)
		}
	}

	l := newBufList(2 << 20)
	small := l.get(64 << 10)
	l.put(small)
	if l.bytes != 0 {
		t.Fatalf("a 64 KiB buffer was kept (%d bytes held)", l.bytes)
	}
	l.put(make([]byte, 0, 3<<20)) // grown by append: never asked for
	if l.bytes != 0 {
		t.Fatalf("a buffer of a size never asked for was kept (%d bytes held)", l.bytes)
	}
	bufs := [][]byte{l.get(1 << 20), l.get(1 << 20), l.get(1 << 20)}
	for _, b := range bufs {
		l.put(b)
	}
	if l.bytes != 2<<20 {
		t.Fatalf("%d bytes held, want the bound of %d", l.bytes, 2<<20)
	}
	l.drain()
	if l.bytes != 0 || len(l.free[1<<20]) != 0 {
		t.Fatalf("after drain: %d bytes, %d buffers", l.bytes, len(l.free[1<<20]))
	}
	if b := l.get(1 << 20); same(b[:1], bufs[0][:1]) || same(b[:1], bufs[1][:1]) {
		t.Fatal("a drained buffer was handed out again")
	}
}

// TestSmallFileFirstBuffer: a small file's first block buffer is sized to
// its first write (the power of two at least its end, from 4 KiB), not to
// a 64 KiB floor, and grows by doubling as the file does: an untarred
// tree's files are a few KiB each (issue 28).
func TestSmallFileFirstBuffer(t *testing.T) {
	for _, c := range []struct{ end, want int64 }{{1, 4 << 10}, {4 << 10, 4 << 10}, {10240, 16 << 10}, {40 << 10, 64 << 10}} {
		if got := firstCap(c.end); int64(got) != c.want {
			t.Errorf("firstCap(%d) = %d, want %d", c.end, got, c.want)
		}
	}
	e := newEnv(t, 1<<20, 0)
	ctx := context.Background()
	in := e.create(t, "small")
	h, _, err := e.c.Open(ctx, in, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release(ctx)
	capOf := func() int {
		h.f.mu.Lock()
		defer h.f.mu.Unlock()
		return cap(h.f.dirty[0].buf)
	}
	if _, err := h.Write(ctx, 0, make([]byte, 10240)); err != nil {
		t.Fatal(err)
	}
	if got := capOf(); got != 16<<10 {
		t.Fatalf("after a 10 KiB write: buffer of %d bytes, want 16 KiB", got)
	}
	if _, err := h.Write(ctx, 10240, make([]byte, 10240)); err != nil {
		t.Fatal(err)
	}
	if got := capOf(); got != 32<<10 {
		t.Fatalf("after 20 KiB: buffer of %d bytes, want 32 KiB", got)
	}
}
