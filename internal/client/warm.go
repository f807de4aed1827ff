package client

import (
	"context"
	"fmt"

	"tessera/internal/meta"
)

// Warm starts fetching, in the background, the first blocks of file in as
// its committed recipe names them, as many as a sequential reader's
// read-ahead asks for (Config.ReadAheadBlocks), so that a reader about to
// open it finds them cached. It reads the recipe (one meta call) before it
// returns. The blocks are fetched, verified and cached by hash as the
// read-ahead's are: should the file change meanwhile, reads of its new
// recipe never use them, and they only took room in the cache. A mount
// calls it while an open waits for something else (a fileset file's
// revalidation with home, a WAN round trip).
func (c *Client) Warm(ctx context.Context, in meta.Inode) error {
	bs := uint64(in.BlockSize)
	if !in.IsRegular() || in.Size == 0 || bs == 0 {
		return nil
	}
	n := min(uint64(c.readAheadBlocks(int64(bs))), (in.Size+bs-1)/bs)
	r, err := c.api.GetRecipe(ctx, in.Ino, 0, n)
	if err != nil {
		return fmt.Errorf("warm inode %d: %w", in.Ino, err)
	}
	for i, h := range r.Blocks {
		if h.IsZero() || (r.HasInline && r.First+uint64(i) == 0) {
			continue
		}
		if _, ok := r.Composed[h]; ok {
			continue // put together from pieces: left to the reader
		}
		c.prefetch(h)
	}
	return nil
}
