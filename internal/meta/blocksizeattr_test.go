package meta_test

import (
	"errors"
	"slices"
	"strconv"
	"syscall"
	"testing"

	"tessera/internal/block"
	"tessera/internal/meta"
)

// The block size xattr: set on a directory, its new files and directories
// get it; set on an unnamed empty file, that file gets it; refused on a
// named or written file and out of bounds; readable, not listed, not
// removable.
func TestBlockSizeXattr(t *testing.T) {
	f := newPolicyFixture(t, "")
	setBS := func(ino meta.Ino, n uint64) error {
		return f.api.SetXattr(f.ctx, ino, meta.BlockSizeXattr, []byte(strconv.FormatUint(n, 10)), 0)
	}
	d := f.create(meta.RootIno, "d", syscall.S_IFDIR|0755)
	const bs = 5<<20 + 3 // 5 MiB + 3: no power of two
	if err := setBS(d.Ino, bs); err != nil {
		t.Fatal(err)
	}
	v, err := f.api.GetXattr(f.ctx, d.Ino, meta.BlockSizeXattr)
	if err != nil || string(v) != strconv.Itoa(bs) {
		t.Fatalf("get = %q, %v; want %d", v, err, bs)
	}
	file := f.create(d.Ino, "f", syscall.S_IFREG|0644)
	sub := f.create(d.Ino, "sub", syscall.S_IFDIR|0755)
	if file.BlockSize != bs || sub.BlockSize != bs {
		t.Fatalf("made in the directory: file %d, dir %d; want %d", file.BlockSize, sub.BlockSize, bs)
	}
	if other := f.create(meta.RootIno, "g", syscall.S_IFREG|0644); other.BlockSize != meta.DefaultBlockSize {
		t.Fatalf("a file elsewhere got block size %d", other.BlockSize)
	}
	names, err := f.api.ListXattr(f.ctx, d.Ino)
	if err != nil || slices.Contains(names, meta.BlockSizeXattr) {
		t.Fatalf("listed: %q, %v", names, err)
	}
	if err := f.api.RemoveXattr(f.ctx, d.Ino, meta.BlockSizeXattr); !errors.Is(err, meta.ErrInvalid) {
		t.Fatalf("remove = %v, want ErrInvalid", err)
	}

	// An unnamed file: settable while empty.
	tmp, err := f.api.Create(f.ctx, meta.CreateReq{Parent: meta.RootIno, Mode: syscall.S_IFREG | 0644, Tmpfile: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := setBS(tmp.Ino, 8<<20+1); err != nil {
		t.Fatal(err)
	}
	if got := f.attr(tmp.Ino).BlockSize; got != 8<<20+1 {
		t.Fatalf("unnamed file's block size %d, want %d", got, 8<<20+1)
	}
	h := block.Sum([]byte("x"))
	if _, err := f.api.Commit(f.ctx, meta.CommitReq{Ino: tmp.Ino, Changes: []meta.BlockChange{{Index: 0, New: h}}, Size: 1, Forced: true}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		what string
		ino  meta.Ino
		n    uint64
	}{
		{"a named file", file.Ino, 1 << 20},
		{"a written unnamed file", tmp.Ino, 1 << 20},
		{"too small", d.Ino, meta.MinFileBlockSize - 1},
		{"too large", d.Ino, meta.MaxFileBlockSize + 1},
	} {
		if err := setBS(c.ino, c.n); !errors.Is(err, meta.ErrInvalid) {
			t.Errorf("%s: set = %v, want ErrInvalid", c.what, err)
		}
	}
	if err := f.api.SetXattr(f.ctx, d.Ino, meta.BlockSizeXattr, []byte("4M"), 0); !errors.Is(err, meta.ErrInvalid) {
		t.Errorf("set 4M = %v, want ErrInvalid", err)
	}
	if got := f.attr(file.Ino).BlockSize; got != bs {
		t.Fatalf("refused set changed the file's block size to %d", got)
	}
}
