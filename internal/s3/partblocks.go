package s3

import (
	"context"
	"encoding/json"

	"tessera/internal/meta"
)

// The block size of multipart parts.
//
// A completed upload shares its parts' blocks (assemble.go), which works
// when every part but the last is a whole number of the object's blocks,
// all of one size, and the last one's blocks are of that size too or it
// is one block no larger. S3 clients send parts of one size P but the
// last: 8 MiB (boto3, the AWS CLI), multiples of 16 MiB (minio-go), but
// also 5 MiB (rclone) or any size a user asks for. So the parts are
// written in blocks that divide P: part 1 chooses the block size from its
// own size (partBlocks), records it in the upload's record, and the parts
// after it are written in it too; the object is made in part 1's block
// size. A part written before part 1 chose (parallel uploads) chooses
// from its own size, which is the same choice for a part of size P, or,
// under MinPartSize (only the last part is that small), takes the
// directory's block size. A last part racing ahead of part 1 may so end
// up with other blocks than the object's, and is then copied at the
// complete (at most one part's bytes).

// Bounds of a part's own block size: one block of the part up to
// maxPartBlock (the client holds a block being written in memory), else
// the largest divisor of the part from minPartBlock to maxPartBlock.
const (
	maxPartBlock = 16 << 20
	minPartBlock = 1 << 20
)

// partBlocks is the block size for parts of size bytes in a directory of
// def-byte blocks: def when the part is a whole number of them (or no
// more than one, or of unknown size), else a size that divides the part,
// or def when none fits (the part is then copied at the complete).
func partBlocks(size int64, def uint32) uint32 {
	d := int64(def)
	switch {
	case size <= d || size%d == 0 || size < meta.MinFileBlockSize:
		return def
	case size <= maxPartBlock:
		return uint32(size)
	}
	for k := (size + maxPartBlock - 1) / maxPartBlock; size/k >= minPartBlock; k++ {
		if size%k == 0 {
			return uint32(size / k)
		}
	}
	return def
}

// partBlockSize returns the block size part n (size bytes, -1 unknown) of
// upload dir is written in: the upload's once part 1 chose it, else its
// own choice. Part 1 records its choice in the upload's record.
func (b *Backend) partBlockSize(ctx context.Context, c caller, dir meta.Inode, up uploadRecord, n int32, size int64) (uint32, error) {
	if n != 1 && up.BlockSize != 0 {
		return up.BlockSize, nil
	}
	if n != 1 && size < MinPartSize {
		// Before part 1 chose (parts sent in parallel), a part this
		// small can only be the last: the directory's blocks, which
		// follow parts of whole blocks (the common case).
		return dir.BlockSize, nil
	}
	bs := partBlocks(size, dir.BlockSize)
	if n != 1 || up.BlockSize == bs {
		return bs, nil
	}
	up.BlockSize = bs
	val, _ := json.Marshal(up)
	if err := b.v.SetXattr(ctx, c.cred, dir.Ino, UploadXattr, val, 0); err != nil {
		return 0, b.fail("upload part", err)
	}
	return bs, nil
}
