package s3

import (
	"context"
	"io"
	"syscall"

	"tessera/internal/block"
	"tessera/internal/meta"
	"tessera/internal/vfs"
)

// assembled is how an object was made from its sources.
type assembled struct {
	shared, copied int64 // bytes whose blocks were shared, and copied
}

// assemble makes the content of new file dst (just created, empty) the
// concatenation of srcs: their blocks shared while they fall on block
// boundaries, the rest copied through the client (share.go). The sources'
// recipes are read concurrently and the shared blocks committed in as few
// commits as meta.MaxCommitBlocks allows: a complete of 100 parts is a
// few round trips, not hundreds.
func (b *Backend) assemble(ctx context.Context, c caller, dst meta.Inode, srcs []meta.Inode) (assembled, error) {
	var a assembled
	bs := dst.BlockSize
	if bs == 0 {
		bs = meta.DefaultBlockSize
	}
	// The prefix of sources that may be shared, by their sizes alone.
	n := 0
	for end := uint64(0); n < len(srcs); n++ {
		if end%uint64(bs) != 0 || !shareable(&srcs[n], bs, n == len(srcs)-1) {
			break
		}
		end += srcs[n].Size
	}
	hashes := make([][]block.Hash, n)
	ok := make([]bool, n)
	if err := each(n, recipeReads, func(i int) error {
		var err error
		hashes[i], ok[i], err = b.blocksOf(ctx, &srcs[i], bs, i == len(srcs)-1)
		return err
	}); err != nil {
		return a, err
	}
	var off uint64
	var changes []meta.BlockChange
	i := 0
	for ; i < n && ok[i]; i++ {
		for j, h := range hashes[i] {
			changes = append(changes, meta.BlockChange{Index: off/uint64(bs) + uint64(j), New: h})
		}
		off += srcs[i].Size
	}
	if err := b.commitShared(ctx, dst.Ino, changes, off); err != nil {
		return a, err
	}
	a.shared = int64(off)
	if i == len(srcs) {
		return a, nil
	}
	o, err := b.v.OpenFile(ctx, c.cred, dst.Ino, syscall.O_WRONLY)
	if err != nil {
		return a, err
	}
	buf := make([]byte, ioChunk)
	for ; i < len(srcs); i++ {
		n, err := b.copyFile(ctx, c, srcs[i].Ino, o.File, int64(off), buf)
		a.copied += n
		if err != nil {
			b.v.Release(context.WithoutCancel(ctx), o.Fh)
			return a, err
		}
		off += uint64(n)
	}
	if err := o.File.Flush(ctx); err != nil {
		b.v.Release(context.WithoutCancel(ctx), o.Fh)
		return a, err
	}
	return a, b.v.Release(ctx, o.Fh)
}

// copyFile copies file src into dst at off and returns the bytes copied.
func (b *Backend) copyFile(ctx context.Context, c caller, src meta.Ino, dst *vfs.File, off int64, buf []byte) (int64, error) {
	o, err := b.v.OpenFile(ctx, c.cred, src, syscall.O_RDONLY)
	if err != nil {
		return 0, err
	}
	defer b.v.Release(context.WithoutCancel(ctx), o.Fh)
	size := o.File.Size()
	var n int64
	for n < size {
		k, err := o.File.Read(ctx, n, buf[:min(int64(len(buf)), size-n)])
		if k > 0 {
			if _, werr := dst.Write(ctx, off+n, buf[:k]); werr != nil {
				return n, werr
			}
			n += int64(k)
		}
		if err == io.EOF || k == 0 && err == nil {
			break
		}
		if err != nil {
			return n, err
		}
	}
	return n, nil
}
