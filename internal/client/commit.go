package client

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"syscall"

	"tessera/internal/block"
	"tessera/internal/meta"
	"tessera/internal/policy"
)

// commitLocked uploads every dirty block, waits for the uploads and commits
// the changed recipe entries, size and mtime to the meta service.
func (f *file) commitLocked(ctx context.Context) error {
	if !f.loaded {
		return nil
	}
	inline, inlineOK, err := f.inlineCandidateLocked(ctx)
	if err != nil {
		return err
	}
	if !inlineOK {
		for _, d := range f.dirty {
			f.scheduleLocked(d)
		}
	}
	f.waitLocked()
	if f.err != nil {
		err := f.err
		f.err = nil
		return fmt.Errorf("commit inode %d: %w (%w)", f.ino, syscall.EIO, err)
	}
	if len(f.pending) == 0 && !inlineOK && !f.metaDirty {
		return nil
	}
	req := meta.CommitReq{Ino: f.ino, Size: uint64(f.size), SetSize: f.truncated, Mtime: f.mtime}
	// Under a coherent policy a commit returns only once every other
	// client caching the file has dropped or updated its copy: the next
	// read anywhere sees it (sequential consistency).
	req.Sync = f.c.PolicyFor(f.policyName).Knobs().Cache == policy.CacheCoherent
	idxs := make([]uint64, 0, len(f.pending))
	for idx := range f.pending {
		idxs = append(idxs, idx)
	}
	sort.Slice(idxs, func(i, j int) bool { return idxs[i] < idxs[j] })
	for _, idx := range idxs {
		old, _, _, err := f.committedLocked(ctx, idx)
		if err != nil {
			return err
		}
		req.Changes = append(req.Changes, meta.BlockChange{Index: idx, Old: old, New: f.pending[idx].h})
	}
	if inlineOK {
		old, _, _, err := f.committedLocked(ctx, 0)
		if err != nil {
			return err
		}
		req.Changes = append(req.Changes, meta.BlockChange{Index: 0, Old: old, InlineNew: true, NewInline: inline})
	}
	in, err := f.c.api.Commit(ctx, req)
	if errors.Is(err, meta.ErrConflict) {
		// Another client changed these blocks. Until per-file policies
		// decide (optimistic redo), the last writer wins, as NFS does.
		f.c.log.Warn("commit conflict; forcing last-writer-wins", "inode", f.ino, "err", err)
		req.Forced = true
		in, err = f.c.api.Commit(ctx, req)
	}
	if err != nil {
		return fmt.Errorf("commit inode %d: %w", f.ino, err)
	}
	if inlineOK {
		if d, ok := f.dirty[0]; ok {
			delete(f.dirty, 0)
			f.c.budget.release(f.bs)
			_ = d
		}
	}
	f.installLocked(req, in)
	return nil
}

// inlineCandidateLocked reports whether the file's only change is to block 0
// of a file small enough to keep inline, and returns that content.
func (f *file) inlineCandidateLocked(ctx context.Context) ([]byte, bool, error) {
	if f.size > meta.InlineMax {
		return nil, false, nil
	}
	d, ok := f.dirty[0]
	if !ok || len(f.dirty) != 1 || f.nInflight > 0 {
		return nil, false, nil
	}
	for idx := range f.pending {
		if idx != 0 {
			return nil, false, nil
		}
	}
	buf := d.buf
	if int64(len(buf)) > f.size {
		buf = buf[:f.size]
	}
	out := append([]byte(nil), buf...)
	delete(f.pending, 0)
	return out, true, nil
}

// installLocked makes a successful commit the new committed state.
func (f *file) installLocked(req meta.CommitReq, in meta.Inode) {
	for _, ch := range req.Changes {
		if ch.InlineNew {
			continue
		}
		if ch.Index == 0 {
			f.hasInline = false
			f.inline = nil
		}
		w, i := ch.Index/recipeWindow, ch.Index%recipeWindow
		hs, ok := f.windows[w]
		if !ok {
			continue
		}
		if i >= uint64(len(hs)) {
			hs = append(hs, make([]block.Hash, i+1-uint64(len(hs)))...)
		}
		hs[i] = ch.New
		f.windows[w] = hs
	}
	f.hasInline = in.HasInline
	if in.HasInline {
		f.inline = in.Inline
	}
	if req.SetSize {
		nb := (int64(in.Size) + f.bs - 1) / f.bs
		for w, hs := range f.windows {
			first := int64(w) * recipeWindow
			if keep := nb - first; keep < int64(len(hs)) {
				f.windows[w] = hs[:max(keep, 0)]
			}
		}
	}
	f.pending = make(map[uint64]pend)
	f.truncated = false
	f.metaDirty = false
	f.mtime = 0
	f.writes = 0
	f.committedSize = int64(in.Size)
	f.policyName = in.Policy
	f.change = in.Change
	f.c.mu.Lock()
	f.c.mu.seen[f.ino] = in.Change
	f.c.mu.Unlock()
}

// truncateLocked sets the file's size, rewriting a partial last block so that
// bytes past the new end read as zeros if the file grows again, and commits.
func (f *file) truncateLocked(ctx context.Context, size int64) error {
	f.waitLocked()
	nb := uint64((size + f.bs - 1) / f.bs)
	for idx, d := range f.dirty {
		if idx >= nb {
			delete(f.dirty, idx)
			f.c.budget.release(f.bs)
			_ = d
		}
	}
	for idx := range f.pending {
		if idx >= nb {
			delete(f.pending, idx)
		}
	}
	if size < f.size && size%f.bs != 0 {
		last := uint64(size / f.bs)
		keep := size % f.bs
		if d, ok := f.dirty[last]; ok {
			if int64(len(d.buf)) > keep {
				d.buf = d.buf[:keep]
			}
		} else {
			buf, h, err := f.contentLocked(ctx, last)
			if err != nil {
				return err
			}
			if buf == nil && !h.IsZero() {
				if buf, err = f.c.getBlock(ctx, h); err != nil {
					return fmt.Errorf("truncate inode %d: %w", f.ino, err)
				}
			}
			if int64(len(buf)) > keep {
				nbuf := make([]byte, keep, f.bs)
				copy(nbuf, buf)
				f.c.budget.force(f.bs)
				f.dirty[last] = &dblock{idx: last, buf: nbuf}
			}
		}
	}
	f.size = size
	f.truncated = true
	f.metaDirty = true
	return f.commitLocked(ctx)
}
