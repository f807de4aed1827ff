package client

import (
	"bytes"
	"context"
	"fmt"
	"syscall"
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

// TestSmallFileBufferIsItsSize: the first write of a small file takes a
// buffer of the size written (a page at least), not a fixed 64 KiB (an
// untar's files of a few KiB made most of the client's allocation,
// bench/results/2026-11-29-nfs-6.md); appends grow it by doubling, and the
// bytes read back are those written.
func TestSmallFileBufferIsItsSize(t *testing.T) {
	e := newEnv(t, 1<<20, 0)
	ctx := context.Background()
	for _, c := range []struct{ size, want int }{{100, 4 << 10}, {3000, 4 << 10}, {10000, 10000}, {200 << 10, 200 << 10}} {
		in := e.create(t, fmt.Sprintf("f%d", c.size))
		h, _, err := e.c.Open(ctx, in, syscall.O_RDWR)
		if err != nil {
			t.Fatal(err)
		}
		data := bytes.Repeat([]byte{'s'}, c.size)
		write(t, h, 0, data)
		h.f.mu.Lock()
		got := cap(h.f.dirty[0].buf)
		h.f.mu.Unlock()
		if got != c.want {
			t.Errorf("a %d-byte file's first buffer: %d bytes, want %d", c.size, got, c.want)
		}
		more := bytes.Repeat([]byte{'m'}, 5000)
		write(t, h, int64(c.size), more)
		flush(t, h)
		if err := h.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if back := e.readAll(t, in.Ino); !bytes.Equal(back, append(data, more...)) {
			t.Errorf("a %d-byte file and 5000 more: read back %d bytes, not those written", c.size, len(back))
		}
	}
}
