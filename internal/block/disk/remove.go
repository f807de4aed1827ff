package disk

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"tessera/internal/block"
)

// Remove deletes block h if its mtime (its latest Put) is before notAfter
// (unix ns). Removing an absent block reports false and no error.
func (s *Store) Remove(ctx context.Context, h block.Hash, notAfter int64) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, fmt.Errorf("remove block %s: %w", h, err)
	}
	removed, emptied, err := s.removeLocked(h, notAfter)
	if emptied {
		s.prune(h)
	}
	return removed, err
}

// removeLocked is Remove under h's stripe; emptied reports that h's leaf
// may now be empty (prune, which must not be called under the stripe).
func (s *Store) removeLocked(h block.Hash, notAfter int64) (removed, emptied bool, err error) {
	p := s.Path(h)
	mu := s.lockFor(h)
	mu.Lock()
	defer mu.Unlock()
	fi, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return false, false, nil
	}
	if err != nil {
		return false, false, fmt.Errorf("remove block %s: %w", h, err)
	}
	if fi.ModTime().UnixNano() >= notAfter {
		return false, false, nil
	}
	if err := os.Remove(p); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return false, false, nil
		}
		return false, false, fmt.Errorf("remove block %s: %w", h, err)
	}
	return true, s.dropped(h, fi), nil
}

// dropped accounts for block file fi of h gone from its leaf (removed or
// quarantined) and reports whether the leaf may now be empty.
func (s *Store) dropped(h block.Hash, fi fs.FileInfo) (emptied bool) {
	s.addUsage(-1, -fi.Size(), -allocOfInfo(fi))
	return s.fan.leaves[leafIndex(h)].n.Add(-1) <= 0
}

// RemoveMany is Remove for each of rs, in order (block.BatchRemover): the
// block server's POST /v1/remove and an in-process reclaimer use it.
func (s *Store) RemoveMany(ctx context.Context, rs []block.Removal) ([]bool, error) {
	out := make([]bool, len(rs))
	for i, r := range rs {
		removed, err := s.Remove(ctx, r.Hash, r.NotAfter)
		if err != nil {
			return nil, err
		}
		out[i] = removed
	}
	return out, nil
}
