package client

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"syscall"
	"time"

	"tessera/internal/backoff"
	"tessera/internal/block"
	"tessera/internal/clock"
	"tessera/internal/meta"
)

// maxCommitAttempts bounds the commits one commitLocked sends when each
// meets a conflict (the first and its redos); past it the commit fails
// with EIO and the change stays buffered for the next fsync or close. Two
// clients committing the same 4 KiB some 500 times a second each exhausted
// 10 attempts about once in 560 commits (bench/capfs.sh); 20 attempts wait
// at most about half a second in all.
const maxCommitAttempts = 20

// Optimistic commits (DESIGN §2.3, CAPFS §3.4.4). A commit names, for every
// changed block, the hash the change was made on. When another client has
// committed the block since, the meta service answers with a
// *meta.ConflictError holding the current hashes; the client then redoes its
// change: it reads the current content, copies over it the byte ranges it
// wrote (spans; bytes it did not write keep the other client's content),
// uploads the result and commits again with the current hash as the new Old.
// Every attempt is one atomic commit of all the file's changed blocks, so
// each write lands whole: two writers' overlapping bytes end up as one of
// them wrote last, never mixed within a write. After maxCommitAttempts
// conflicts the commit fails with EIO and one log line.
//
// A file set forced (Handle.SetForced; the forced, relaxed and nfs policies)
// sends every commit with meta.CommitReq.Forced: the meta service installs
// its blocks without comparing, the last writer wins whole blocks. Sending
// Forced from the first attempt rather than after a conflict costs nothing
// in outcome (a forced retry would install the same hashes) and saves the
// conflict's round trip.

// redoStats counts commits for Client.Stats; sleep, when set (tests), is
// used instead of a timer between attempts.
type redoStats struct {
	commits, conflicts, retries, failed atomic.Uint64
	sleep                               func(ctx context.Context, d time.Duration) error
}

// redoBackoff is the wait between attempts that conflicted again: from
// [0.5, 1] ms, doubling up to [16, 32] ms, jittered so that clients
// contending for a block do not retry in step.
var redoBackoff = backoff.Policy{Base: 750 * time.Microsecond, Max: 24 * time.Millisecond, Jitter: 1.0 / 3}

// backoff waits bo's next wait, on r.sleep when set.
func (r *redoStats) backoff(ctx context.Context, bo *backoff.Backoff) error {
	if r.sleep != nil {
		return r.sleep(ctx, bo.Next())
	}
	return bo.Wait(ctx, clock.Real{})
}

// ourBlock is this client's side of one change of a commit, for a redo.
type ourBlock struct {
	sp     spans
	h      block.Hash // this client's content, unless inline
	inline []byte     // this client's content when it was inline
	redone bool
	// merged is the content a redo sent, kept only while a dirty block
	// of the same index waits to be rebased on it (installLocked); other
	// merged blocks are dropped once uploaded, so a redo of many blocks
	// holds about one block at a time beyond the caches.
	merged []byte
}

// SetForced chooses what a commit of the handle's file does when another
// client committed the same blocks since this client read them: false (the
// default) redoes this client's writes on top of the current content;
// true installs this client's blocks as they are (last writer wins whole
// blocks). The choice holds while the file is open in this client.
func (h *Handle) SetForced(forced bool) {
	h.f.mu.Lock()
	defer h.f.mu.Unlock()
	h.f.forced = forced
}

// sendLocked sends req, redoing its changes after each conflict, and
// returns the inode as the successful commit left it.
func (f *file) sendLocked(ctx context.Context, req *meta.CommitReq, ours []*ourBlock) (meta.Inode, error) {
	st := &f.c.redo
	bo := redoBackoff.Start()
	for attempt := 1; ; attempt++ {
		in, err := f.c.api.Commit(ctx, *req)
		if err == nil {
			st.commits.Add(1)
			f.doubt = false
			return in, nil
		}
		if !errors.Is(err, meta.ErrConflict) {
			f.doubt = f.doubt || maybeApplied(err)
			return meta.Inode{}, fmt.Errorf("commit inode %d: %w", f.ino, err)
		}
		if f.doubt {
			return f.settleLocked(ctx, req, err)
		}
		st.conflicts.Add(1)
		if attempt >= maxCommitAttempts {
			st.failed.Add(1)
			f.c.log.Error("commit failed: another client changed the blocks before each of the attempts",
				"inode", f.ino, "blocks", conflictedBlocks(req, err), "attempts", attempt)
			return meta.Inode{}, fmt.Errorf("commit inode %d: %d attempts conflicted: %w (%w)", f.ino, attempt, syscall.EIO, err)
		}
		// The first conflict is redone at once on the hashes it carries.
		// Conflicts that repeat mean contention: wait, so that contending
		// clients fall out of step, then read the hashes afresh, as the
		// conflict's are as old as the wait.
		cerr := err
		if attempt > 1 {
			if err := st.backoff(ctx, bo); err != nil {
				return meta.Inode{}, fmt.Errorf("commit inode %d: %w", f.ino, err)
			}
			cerr = nil
		}
		if err := f.redoLocked(ctx, req, ours, cerr); err != nil {
			return meta.Inode{}, err
		}
		st.retries.Add(1)
	}
}

// maybeApplied reports whether a commit that failed with err may have been
// applied all the same: an I/O error of the meta service (its store's
// answer to the transaction was lost), not one that says the commit never
// reached it, nor an answer that refused it.
func maybeApplied(err error) bool {
	return errors.Is(err, meta.ErrIO) && !errors.Is(err, meta.ErrUnreachable) && !errors.Is(err, meta.ErrMaybeApplied)
}

// settleLocked answers a commit that conflicted after an earlier attempt
// of its changes failed in doubt (file.doubt). If the conflict shows every
// change installed, that attempt was applied: the inode as it is now is
// the answer. Otherwise it cannot be told whether it was applied before
// another client changed the blocks, and a redo would apply it a second
// time after that client's write: it fails with meta.ErrMaybeApplied.
func (f *file) settleLocked(ctx context.Context, req *meta.CommitReq, cerr error) (meta.Inode, error) {
	var ce *meta.ConflictError
	if errors.As(cerr, &ce) && meta.Installed(req.Changes, ce.Current) {
		in, err := f.c.api.GetAttr(ctx, f.ino)
		if err != nil {
			return meta.Inode{}, fmt.Errorf("commit inode %d: %w", f.ino, err)
		}
		f.doubt = false
		f.c.redo.commits.Add(1)
		return in, nil
	}
	return meta.Inode{}, fmt.Errorf("commit inode %d: %w: an earlier attempt failed in doubt and the blocks changed since", f.ino, meta.ErrMaybeApplied)
}

// redoLocked rebuilds every change of req whose block changed underneath:
// the current content with this client's ranges copied over it, uploaded
// (or inline), with the current hash as Old.
func (f *file) redoLocked(ctx context.Context, req *meta.CommitReq, ours []*ourBlock, cerr error) error {
	cur, err := f.currentLocked(ctx, req, cerr)
	if err != nil {
		return err
	}
	for i := range req.Changes {
		ch, o := &req.Changes[i], ours[i]
		c, ok := cur[ch.Index]
		if !ok || c.New == ch.Old {
			continue
		}
		ours := o.inline
		if ours == nil {
			if ours, err = f.fetchLocked(ctx, ch.Index, o.h); err != nil {
				return fmt.Errorf("redo: %w", err)
			}
		}
		now := c.NewInline
		if !c.InlineNew {
			if now, err = f.fetchLocked(ctx, ch.Index, c.New); err != nil {
				return fmt.Errorf("redo: %w", err)
			}
		}
		m := make([]byte, max(int64(len(now)), o.sp.end))
		copy(m, now)
		o.sp.overlay(m, ours)
		if lim := int64(req.Size) - int64(ch.Index)*f.bs; req.SetSize && int64(len(m)) > lim {
			m = m[:max(lim, 0)]
		}
		o.redone, o.merged = true, nil
		if _, ok := f.dirty[ch.Index]; ok {
			o.merged = m
		}
		ch.Old = c.New
		if ch.InlineNew && len(m) <= meta.InlineMax {
			ch.NewInline = m
			continue
		}
		ch.InlineNew, ch.NewInline, ch.Compose = false, nil, nil
		h, rep, err := f.c.upload(ctx, m, f.replicas)
		if err != nil {
			return fmt.Errorf("redo inode %d block %d: %w (%w)", f.ino, ch.Index, syscall.EIO, err)
		}
		if o.h != h && !o.h.IsZero() && len(req.Superseded) < meta.MaxSuperseded {
			req.Superseded = append(req.Superseded, o.h) // ours, redone: never named
		}
		if rep != nil {
			if len(f.repls) >= 64 {
				f.repls = pruneDone(f.repls)
			}
			f.repls = append(f.repls, rep)
		}
		ch.New = h
	}
	return nil
}

// conflictedBlocks lists the indices of req whose Old the conflict cerr
// found changed (all of them when it does not say), for the log.
func conflictedBlocks(req *meta.CommitReq, cerr error) []uint64 {
	var out []uint64
	ce := (*meta.ConflictError)(nil)
	known := errors.As(cerr, &ce) && len(ce.Current) > 0
	for _, ch := range req.Changes {
		changed := !known
		for i := 0; known && i < len(ce.Current); i++ {
			if c := ce.Current[i]; c.Index == ch.Index && c.New != ch.Old {
				changed = true
			}
		}
		if changed {
			out = append(out, ch.Index)
		}
	}
	return out
}

// currentLocked returns the current hash (and inline content) of every
// block req names, from the conflict when it carries them, else from the
// meta service.
func (f *file) currentLocked(ctx context.Context, req *meta.CommitReq, cerr error) (map[uint64]meta.BlockChange, error) {
	cur := make(map[uint64]meta.BlockChange, len(req.Changes))
	if ce := (*meta.ConflictError)(nil); errors.As(cerr, &ce) && len(ce.Current) > 0 {
		for _, c := range ce.Current {
			cur[c.Index] = c
			if c.Compose != nil {
				f.learnCompsLocked(map[block.Hash]meta.Composition{c.New: *c.Compose})
			}
		}
		return cur, nil
	}
	if len(req.Changes) == 0 {
		return cur, nil
	}
	// req.Changes are in ascending order: read the run they span.
	first, last := req.Changes[0].Index, req.Changes[len(req.Changes)-1].Index
	hs := make(map[uint64]block.Hash)
	for next := first; next <= last; {
		r, err := f.c.api.GetRecipe(ctx, f.ino, next, last+1-next)
		if err != nil {
			return nil, fmt.Errorf("redo: read recipe of inode %d: %w", f.ino, err)
		}
		f.learnCompsLocked(r.Composed)
		if next == 0 && r.HasInline {
			cur[0] = meta.BlockChange{New: block.Sum(r.Inline), InlineNew: true, NewInline: r.Inline}
		}
		for i, h := range r.Blocks {
			hs[next+uint64(i)] = h
		}
		if len(r.Blocks) == 0 {
			break // the rest lies past the end: holes
		}
		next += uint64(len(r.Blocks))
	}
	for _, ch := range req.Changes {
		if _, ok := cur[ch.Index]; !ok {
			cur[ch.Index] = meta.BlockChange{Index: ch.Index, New: hs[ch.Index]}
		}
	}
	return cur, nil
}
