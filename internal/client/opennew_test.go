package client

import (
	"bytes"
	"context"
	"maps"
	"math/rand"
	"syscall"
	"testing"

	"tessera/internal/meta"
)

// TestOpenNewAsksNoRecipe: a file opened with OpenNew (a create that made
// it) is written and committed without asking the meta service for its
// recipe, which is empty; its content reads back whole. The same write
// through OpenCreated asks once.
func TestOpenNewAsksNoRecipe(t *testing.T) {
	const bs = 64 << 10
	for _, tc := range []struct {
		name string
		new  bool
		want map[string]int
	}{
		{"OpenNew", true, map[string]int{"commit": 1}},
		{"OpenCreated", false, map[string]int{"commit": 1, "getrecipe": 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			s := newShared(t, bs)
			cm := &callCounter{API: s.api, n: make(map[string]int)}
			c := testClient(t, cm, map[string]*memStore{"b0": s.store}, Config{})
			mark := c.CallbackMark()
			in, err := s.api.Create(ctx, meta.CreateReq{Parent: meta.RootIno, Name: "f", Mode: syscall.S_IFREG | 0o644, Excl: true, Open: true})
			if err != nil {
				t.Fatal(err)
			}
			openNew := c.OpenCreated
			if tc.new {
				openNew = c.OpenNew
			}
			h, _, err := openNew(ctx, in, mark, syscall.O_RDWR)
			if err != nil {
				t.Fatal(err)
			}
			data := randBytes(rand.New(rand.NewSource(25)), 3*bs+100)
			write(t, h, 0, data)
			if err := h.Release(ctx); err != nil {
				t.Fatal(err)
			}
			if got := cm.take(); !maps.Equal(got, tc.want) {
				t.Fatalf("meta calls %v, want %v", got, tc.want)
			}
			if got := s.content(t, in.Ino); !bytes.Equal(got, data) {
				t.Fatalf("content: %d bytes, not those written (%d)", len(got), len(data))
			}
		})
	}
}

// TestExpectSize: a writer that said the file's size gets a buffer of
// that size for the block the file ends in, not a whole block's; a write
// past the size said still lands (the buffer grows), and the content reads
// back whole.
func TestExpectSize(t *testing.T) {
	const bs = 1 << 20
	for _, tc := range []struct {
		name          string
		expect, write int
	}{{"as said", 300 << 10, 300 << 10}, {"past it", 300 << 10, bs - 5}, {"two blocks", bs + 100, bs + 100}} {
		t.Run(tc.name, func(t *testing.T) {
			s := newShared(t, bs)
			c := testClient(t, s.api, map[string]*memStore{"b0": s.store}, Config{})
			in := s.create(t, "f")
			h := open(t, c, in.Ino)
			h.ExpectSize(int64(tc.expect))
			data := randBytes(rand.New(rand.NewSource(25)), tc.write)
			chunk := 256 << 10
			for off := 0; off < len(data); off += chunk {
				write(t, h, int64(off), data[off:min(off+chunk, len(data))])
				if off == 0 {
					h.f.mu.Lock()
					got := cap(h.f.dirty[0].buf)
					h.f.mu.Unlock()
					if want := min(tc.expect, bs); got != want {
						t.Fatalf("first block's buffer: capacity %d, want %d", got, want)
					}
				}
			}
			flush(t, h)
			if got := s.content(t, in.Ino); !bytes.Equal(got, data) {
				t.Fatalf("content: %d bytes, not those written (%d)", len(got), len(data))
			}
		})
	}
}
