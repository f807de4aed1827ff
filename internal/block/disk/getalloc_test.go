package disk_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"testing"

	"tessera/internal/block"
	"tessera/internal/block/blocktest"
)

// allocGetter is what a client in the same process (tessera up's mount)
// reads through: internal/client's interface of the same name.
type allocGetter interface {
	GetAlloc(ctx context.Context, h block.Hash, alloc func(n int) []byte) ([]byte, error)
}

// TestGetAllocReadsIntoCallersBuffer: a Store, and the trusted view tessera
// up's mount reads through, read a block into the caller's buffer when it
// is large enough (the memory of a block the client's cache evicted),
// verified as Get's; a Get used to allocate a new buffer every time.
func TestGetAllocReadsIntoCallersBuffer(t *testing.T) {
	ctx := context.Background()
	s := open(t, t.TempDir())
	data := blocktest.Data(2, 64<<10)
	h := put(t, s, data)
	for _, st := range []block.Store{s, s.Trusted()} {
		ag, ok := st.(allocGetter)
		if !ok {
			t.Fatalf("%T reads only into buffers of its own", st)
		}
		buf := make([]byte, 0, 80<<10)
		asked := 0
		got, err := ag.GetAlloc(ctx, h, func(n int) []byte { asked = n; return buf })
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("%T.GetAlloc: %v", st, err)
		}
		if asked != len(data) || &got[0] != &buf[:1][0] {
			t.Fatalf("%T.GetAlloc asked for %d bytes and read into its own buffer; want %d into the caller's", st, asked, len(data))
		}
		// Too small a buffer, or none: a new one.
		if got, err := ag.GetAlloc(ctx, h, func(int) []byte { return make([]byte, 10) }); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("%T.GetAlloc with a small buffer: %v", st, err)
		}
	}
	bad := bytes.Clone(data)
	bad[7] ^= 1
	if err := os.WriteFile(s.Path(h), bad, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := block.Store(s).(allocGetter).GetAlloc(ctx, h, func(n int) []byte { return make([]byte, n) }); !errors.Is(err, block.ErrCorrupt) {
		t.Fatalf("GetAlloc of a corrupt file: %v, want ErrCorrupt", err)
	}
}
