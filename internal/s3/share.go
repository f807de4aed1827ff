package s3

import (
	"context"
	"fmt"
	"sync"

	"tessera/internal/block"
	"tessera/internal/meta"
)

// Sharing blocks: an object made from other files (a completed multipart
// upload from its parts, a copy from its source) gets their block hashes
// committed into its recipe, not their bytes: the meta service's
// reference counts make the blocks the new file's too, and they stay when
// the sources go. A recipe is blocks of the file's block size, so a
// source lands on the object's block boundaries only at an offset that is
// a whole number of blocks, and only its last block may be short: from
// the first source that breaks this, the rest is copied (copy.go).

// blocksOf returns the block hashes of file in (size in.Size) as blocks
// of bs bytes, or ok false when they cannot be shared: block 0 kept
// inline, composed blocks, a block size other than bs, or a change under
// the read. A file of one block no larger than bs is shared whatever its
// block size when it comes last (its one block is the object's last).
func (b *Backend) blocksOf(ctx context.Context, in *meta.Inode, bs uint32, last bool) ([]block.Hash, bool, error) {
	if !shareable(in, bs, last) {
		return nil, false, nil
	}
	nb := (in.Size + uint64(bs) - 1) / uint64(bs)
	out := make([]block.Hash, 0, nb)
	var change uint64
	for uint64(len(out)) < nb {
		r, err := b.api.GetRecipe(ctx, in.Ino, uint64(len(out)), nb-uint64(len(out)))
		if err != nil {
			return nil, false, err
		}
		if r.HasInline || len(r.Composed) > 0 || r.Size != in.Size || len(r.Blocks) == 0 {
			return nil, false, nil
		}
		if change != 0 && r.Change != change {
			return nil, false, nil // changed between runs
		}
		change = r.Change
		out = append(out, r.Blocks...)
	}
	for _, h := range out {
		if h.IsZero() {
			return nil, false, nil // a hole: nothing to share, copy it
		}
	}
	return out, true, nil
}

// shareable reports whether in's blocks can be blocks of bs bytes of an
// object, by its attributes (blocksOf then reads its recipe).
func shareable(in *meta.Inode, bs uint32, last bool) bool {
	oneBlock := last && in.Size <= uint64(bs) && in.Size <= uint64(in.BlockSize)
	return (in.BlockSize == bs || oneBlock) && !in.HasInline
}

// commitShared installs changes in file ino and sets its size to size:
// commits of at most meta.MaxCommitBlocks changes, forced (the file is new
// and nobody else writes it).
func (b *Backend) commitShared(ctx context.Context, ino meta.Ino, changes []meta.BlockChange, size uint64) error {
	for done := 0; done < len(changes); {
		ch := changes[done:min(len(changes), done+meta.MaxCommitBlocks)]
		if _, err := b.api.Commit(ctx, meta.CommitReq{Ino: ino, Changes: ch, Size: size, Forced: true}); err != nil {
			return fmt.Errorf("commit of %d shared blocks at %d: %w", len(ch), ch[0].Index, err)
		}
		done += len(ch)
	}
	return nil
}

// recipeReads bounds the meta calls a complete or a part listing has in
// flight at once.
const recipeReads = 16

// each runs f(0..n-1), at most limit at once, and returns the first error.
func each(n, limit int, f func(i int) error) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	sem := make(chan struct{}, limit)
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := f(i); err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return first
}
