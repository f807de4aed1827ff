package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"tessera/internal/block"
	"tessera/internal/meta"
	"tessera/internal/policy"
)

// commitLocked uploads every dirty block, waits for the uploads and commits
// the changed recipe entries, size and mtime to the meta service; a conflict
// is redone on top of the current blocks (sendLocked, redo.go).
func (f *file) commitLocked(ctx context.Context) error {
	if !f.loaded {
		return nil
	}
	if f.lost != nil {
		return f.lost
	}
	inline, d0, inlineOK, err := f.inlineCandidateLocked(ctx)
	if err != nil {
		return err
	}
	if !inlineOK {
		for _, d := range f.dirty {
			f.scheduleLocked(d)
		}
	}
	if err := f.waitLocked(ctx); err != nil {
		return fmt.Errorf("commit inode %d: %w", f.ino, err)
	}
	if f.err != nil {
		// Nothing is committed while a block failed: a recipe naming the
		// blocks around it would read zeros where its data belongs. The
		// block stays dirty for the next commit.
		err := f.err
		f.err = nil
		return fmt.Errorf("commit inode %d: %w", f.ino, uploadErrno(err))
	}
	if len(f.pending) == 0 && !inlineOK && !f.metaDirty {
		return f.sendPendLocked(ctx)
	}
	if err := f.touchOldLocked(ctx); err != nil {
		return err
	}
	if err := f.sendPendLocked(ctx); err != nil {
		return err
	}
	// Under a coherent policy a commit returns only once every other
	// client caching the file has dropped or updated its copy: the next
	// read anywhere sees it (sequential consistency). Under a forcing one
	// it installs without comparing (last writer wins).
	k := f.c.PolicyFor(f.policyName).Knobs()
	req := meta.CommitReq{Ino: f.ino, SetSize: f.truncated, Mtime: f.mtime,
		Forced: f.forced || k.Conflict == policy.ConflictForce, Sync: k.Cache == policy.CacheCoherent,
		Superseded: slices.Clone(f.superseded)}
	released := len(f.superseded)
	var ours []*ourBlock // what a redo needs, by index of req.Changes
	var end int64        // the end of this client's writes
	add := func(idx uint64, b base, ch meta.BlockChange, o *ourBlock) error {
		ch.Index, ch.Old = idx, b.old
		if !b.oldSet {
			old, _, _, err := f.committedLocked(ctx, idx)
			if err != nil {
				return err
			}
			ch.Old = old
		}
		if b.sp.end > 0 {
			end = max(end, int64(idx)*f.bs+b.sp.end)
		}
		o.sp = b.sp
		req.Changes = append(req.Changes, ch)
		ours = append(ours, o)
		return nil
	}
	idxs := make([]uint64, 0, len(f.pending))
	for idx := range f.pending {
		idxs = append(idxs, idx)
	}
	sort.Slice(idxs, func(i, j int) bool { return idxs[i] < idxs[j] })
	for _, idx := range idxs {
		p := f.pending[idx]
		if err := add(idx, p.base, meta.BlockChange{New: p.h, Compose: p.comp}, &ourBlock{h: p.h}); err != nil {
			return err
		}
	}
	if inlineOK {
		ch := meta.BlockChange{InlineNew: true, NewInline: inline}
		if err := add(0, d0.base, ch, &ourBlock{inline: inline}); err != nil {
			return err
		}
	}
	// A truncate sets the size; writes make it at least their end (a size
	// this client saw but did not write is not sent: another client may
	// have truncated since).
	req.Size = uint64(end)
	if f.truncated {
		req.Size = uint64(f.size)
	}
	in, err := f.sendPartsLocked(ctx, &req, ours)
	if errors.Is(err, meta.ErrMaybeApplied) {
		// Its reply was lost and another client changed the blocks since:
		// it may have been applied. Sent again by a later commit it would
		// be redone over that client's write, taking effect a second time
		// after it. The writes are given up as lost (EIO, as a failed
		// writeback); the file is read afresh at its next use.
		f.c.log.Error("commit: uncommitted writes dropped, the meta service may have applied them", "inode", f.ino, "err", err)
		f.loseLocked(err)
		f.stale = true
	}
	if err != nil {
		return err
	}
	if inlineOK {
		if _, ok := f.dirty[0]; ok {
			delete(f.dirty, 0)
			f.c.budget.release(f.bs)
		}
	}
	f.installLocked(req, in, ours)
	f.superseded = slices.Clone(f.superseded[released:])
	return nil
}

// inlineCandidateLocked reports whether the file's only change is to block 0
// of a file small enough to keep inline, and returns that content. A file
// that fills its first block is not: a full block is uploaded as soon as it
// is written (and a failed upload must fail the commit, not be committed
// inline behind the writer's back), which matters where the block size is
// no larger than meta.InlineMax.
func (f *file) inlineCandidateLocked(ctx context.Context) ([]byte, *dblock, bool, error) {
	if f.size > meta.InlineMax || f.size >= f.bs {
		return nil, nil, false, nil
	}
	d, ok := f.dirty[0]
	if !ok || len(f.dirty) != 1 || f.nInflight > 0 {
		return nil, nil, false, nil
	}
	for idx := range f.pending {
		if idx != 0 {
			return nil, nil, false, nil
		}
	}
	buf := d.buf
	if int64(len(buf)) > f.size {
		buf = buf[:f.size]
	}
	out := append([]byte(nil), buf...)
	if p, ok := f.pending[0]; ok {
		f.supersedePendLocked(p)
	}
	delete(f.pending, 0) // d inherited its ranges and base
	return out, d, true, nil
}

// installLocked makes a successful commit the new committed state. Dirty
// blocks written while the commit waited for uploads are rebased on what it
// installed: their ranges become those written into them, their base the
// installed hash, and where a redo merged another client's bytes into the
// block those replace this client's stale view around the ranges.
func (f *file) installLocked(req meta.CommitReq, in meta.Inode, ours []*ourBlock) {
	redone := false
	for i, ch := range req.Changes {
		o := ours[i]
		redone = redone || o.redone
		if d, ok := f.dirty[ch.Index]; ok {
			d.old, d.oldSet = ch.New, true
			if ch.InlineNew {
				d.old = block.Sum(ch.NewInline)
			}
			if o.redone {
				n := max(int64(len(o.merged)), d.own.end)
				buf := make([]byte, n, blockCap(n, f.bs))
				copy(buf, o.merged)
				d.own.overlay(buf, d.buf)
				d.buf, d.shared = buf, 0
			}
			d.sp = d.own.clone()
		}
		if ch.InlineNew {
			f.c.superseded(f.c.compacts.remove(f.ino, ch.Index), block.Hash{})
			continue
		}
		if ch.Index == 0 {
			f.hasInline = false
			f.inline = nil
		}
		f.setHashLocked(ch.Index, ch.New)
		if ch.Compose != nil {
			f.c.superseded(f.c.compacts.add(f.ino, ch.Index, compactJob{h: ch.New, replicas: f.replicas, at: time.Now()}), ch.New)
		} else {
			f.c.superseded(f.c.compacts.remove(f.ino, ch.Index), ch.New)
		}
	}
	f.hasInline = in.HasInline
	if in.HasInline {
		f.inline = in.Inline
	}
	if redone {
		// Other clients committed meanwhile: forget the recipe this
		// client cached, so reads and new bases see their blocks.
		f.windows = make(map[uint64][]block.Hash)
	}
	if req.SetSize {
		f.trimWindowsLocked(int64(in.Size))
	}
	// The committed size may differ from this client's view (another
	// client wrote or truncated); writes still buffered keep theirs.
	if len(f.dirty) == 0 {
		f.size = int64(in.Size)
	} else {
		f.size = max(f.size, int64(in.Size))
	}
	f.pending = make(map[uint64]pend)
	f.truncated = false
	f.metaDirty = false
	f.mtime = 0
	f.writes = 0
	f.committedSize = int64(in.Size)
	f.committed = in
	f.policyName = in.Policy
	f.change = in.Change
	f.c.mu.Lock()
	f.c.mu.seen[f.ino] = in.Change
	f.c.mu.Unlock()
}

// truncateLocked sets the file's size, rewriting a partial last block so that
// bytes past the new end read as zeros if the file grows again, and commits.
func (f *file) truncateLocked(ctx context.Context, size int64) error {
	if err := f.waitLocked(ctx); err != nil {
		return fmt.Errorf("truncate inode %d: %w", f.ino, err)
	}
	nb := uint64((size + f.bs - 1) / f.bs)
	for idx := range f.dirty {
		if idx >= nb {
			delete(f.dirty, idx)
			f.c.budget.release(f.bs)
		}
	}
	for idx, p := range f.pending {
		if idx >= nb {
			f.supersedePendLocked(p)
			delete(f.pending, idx)
		}
	}
	if size%f.bs != 0 {
		if err := f.cutLocked(ctx, uint64(size/f.bs), size%f.bs); err != nil {
			return err
		}
	}
	f.size = size
	f.truncated = true
	f.metaDirty = true
	// A truncate is a change of the data, to the same size too (as ext4
	// does): the kernel leaves the times to the file system for
	// ftruncate, open(O_TRUNC) and truncate(2) alike, and the commit sets
	// ctime with mtime.
	f.mtime = time.Now().UnixNano()
	return f.commitLocked(ctx)
}

// cutLocked makes block last of a file being truncated end at keep. The cut
// [keep, block size) is recorded as a changed range, so that the commit
// conflicts if another client wrote into the block meanwhile and the redo
// cuts the current content too; for that the block is always part of the
// commit, unchanged (Old = New) when this client's content already ends
// before keep.
func (f *file) cutLocked(ctx context.Context, last uint64, keep int64) error {
	if d, ok := f.dirty[last]; ok {
		if int64(len(d.buf)) > keep {
			d.buf = d.buf[:keep]
		}
		d.sp.add(keep, f.bs)
		d.own.add(keep, f.bs)
		d.cut = true
		return nil
	}
	p, hasPend := f.pending[last]
	buf, b, _, err := f.baseLocked(ctx, last, true, -1, 0) // never shared: at -1
	if err != nil {
		return fmt.Errorf("truncate inode %d: %w", f.ino, err)
	}
	b.sp.add(keep, f.bs)
	inline := last == 0 && f.hasInline && !hasPend
	if int64(len(buf)) <= keep && !inline && (hasPend || b.old != staleBase()) {
		h, at := b.old, f.c.cfg.Clock.Now()
		var comp *meta.Composition
		if hasPend {
			h, at, comp = p.h, p.at, p.comp
		}
		f.seq++
		f.pending[last] = pend{h: h, seq: f.seq, at: at, comp: comp, base: b}
		return nil
	}
	if int64(len(buf)) > keep {
		buf = buf[:keep]
	}
	f.c.budget.force(f.bs)
	f.dirty[last] = &dblock{idx: last, buf: buf, base: b, cut: true}
	return nil
}

// setHashLocked records h as block idx's committed hash in the cached
// recipe, if the window holding idx is cached.
func (f *file) setHashLocked(idx uint64, h block.Hash) {
	w, i := idx/recipeWindow, idx%recipeWindow
	hs, ok := f.windows[w]
	if !ok {
		return
	}
	if i >= uint64(len(hs)) {
		hs = append(hs, make([]block.Hash, i+1-uint64(len(hs)))...)
	}
	hs[i] = h
	f.windows[w] = hs
}

// trimWindowsLocked drops the cached recipe entries at or past the end of
// a file of size bytes (after a truncate).
func (f *file) trimWindowsLocked(size int64) {
	nb := (size + f.bs - 1) / f.bs
	for w, hs := range f.windows {
		if keep := nb - int64(w)*recipeWindow; keep < int64(len(hs)) {
			f.windows[w] = hs[:max(keep, 0)]
		}
	}
}
