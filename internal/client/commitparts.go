package client

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"tessera/internal/meta"
)

// Commits in parts. The meta service takes at most meta.MaxCommitBlocks
// changes in one Commit, and refuses with meta.ErrTooBig one whose
// transaction would exceed its bound (Options.MaxTxnOps: composed blocks,
// or a small bound). A file with more changed blocks is committed in
// parts, in ascending block order, each part one atomic commit whose size
// is the end of the writes it holds (so the file grows as a sequential
// writer's would); a truncate's exact size, the superseded uploads and
// Sync go with the last part. The write is acknowledged only when the
// last part is in. A part refused as too big is halved and sent again.
// If a later part fails, every change stays pending: the next commit
// sends them all again, and those already in conflict with themselves
// and are redone to the same content.

// sendPartsLocked sends req (whose changes ours describes, one for one)
// as one commit when it fits, else in parts, and returns the inode as the
// last commit left it. The changes of req are updated in place by redos.
func (f *file) sendPartsLocked(ctx context.Context, req *meta.CommitReq, ours []*ourBlock) (meta.Inode, error) {
	n := min(len(req.Changes), meta.MaxCommitBlocks)
	if len(req.Changes) <= meta.MaxCommitBlocks {
		in, err := f.sendLocked(ctx, req, ours)
		if err == nil || !errors.Is(err, meta.ErrTooBig) || len(req.Changes) <= 1 {
			return in, err
		}
		n = len(req.Changes) / 2
	}
	// Ascending index order, ours with them.
	idx := make([]int, len(req.Changes))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return req.Changes[idx[a]].Index < req.Changes[idx[b]].Index })
	// Reordered in place: the caller installs req with its ours.
	changes := make([]meta.BlockChange, len(idx))
	ob := make([]*ourBlock, len(idx))
	for i, j := range idx {
		changes[i], ob[i] = req.Changes[j], ours[j]
	}
	copy(req.Changes, changes)
	copy(ours, ob)
	changes = req.Changes
	var in meta.Inode
	for done := 0; done < len(changes); {
		k := min(n, len(changes)-done)
		last := done+k == len(changes)
		part := meta.CommitReq{Ino: req.Ino, Changes: changes[done : done+k], Mtime: req.Mtime, Forced: req.Forced}
		for i, ch := range part.Changes {
			if e := ours[done+i].sp.end; e > 0 {
				part.Size = max(part.Size, ch.Index*uint64(f.bs)+uint64(e))
			}
		}
		if last {
			part.Size = max(part.Size, req.Size)
			part.SetSize, part.Sync, part.Superseded = req.SetSize, req.Sync, req.Superseded
		}
		got, err := f.sendLocked(ctx, &part, ours[done:done+k])
		if errors.Is(err, meta.ErrTooBig) && k > 1 {
			n = k / 2
			continue
		}
		if err != nil {
			return meta.Inode{}, fmt.Errorf("commit blocks %d.. of inode %d in parts: %w", part.Changes[0].Index, f.ino, err)
		}
		in = got
		done += k
	}
	return in, nil
}
