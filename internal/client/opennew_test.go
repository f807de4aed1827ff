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
