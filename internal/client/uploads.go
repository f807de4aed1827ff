// Uploads of dirty blocks: scheduling one in the background, what its
// completion records (pending for the next commit, versions, superseded
// uploads), and waiting for them.

package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"syscall"
	"time"

	"tessera/internal/backoff"
	"tessera/internal/block"
	"tessera/internal/meta"
)

// scheduleLocked starts uploading d in the background.
func (f *file) scheduleLocked(d *dblock) {
	delete(f.dirty, d.idx)
	if lim := f.size - int64(d.idx)*f.bs; int64(len(d.buf)) > lim {
		d.buf = d.buf[:max(lim, 0)]
	}
	f.seq++
	d.seq = f.seq
	f.noteTailLocked(d)
	f.inflight[d.idx] = d
	f.nInflight++
	f.c.bg.Add(1)
	n := f.replicas
	plan := f.planComposeLocked(d)
	// A block whose committed version is composed is under small
	// writes: uploaded whole (its patches reached their bound), it keeps
	// its hash tree for the next version (trees.go).
	_, hot := f.comps[d.base.old]
	hot = hot && d.base.oldSet
	go func() {
		defer f.c.bg.Done()
		var h block.Hash
		var comp *meta.Composition
		var rep *replication
		var err error
		if plan != nil && !block.AllZero(d.buf) {
			h, comp, rep, err = f.c.uploadComposed(context.Background(), d.buf, plan, n)
		} else if hot {
			h, rep, err = f.c.uploadSum(context.Background(), d.buf, n, f.c.sumTree)
		} else {
			h, rep, err = f.c.upload(context.Background(), d.buf, n)
		}
		f.uploadDone(d, h, comp, rep, err)
		if rep != nil {
			<-rep.done // the buffer is in use until every copy was tried
		}
		if err == nil && comp != nil {
			// A block under small writes: the next one needs its
			// content, which would otherwise be assembled from its
			// pieces. d.buf is never written again, so the cache may
			// hold it.
			f.c.mem.putKept(h, d.buf)
			f.newVersion(d.idx, h, d.seq)
		} else if err == nil {
			// No reader holds d.buf any more: uploadDone took it out of
			// inflight, and readers copy from it under f.mu; unless an
			// append writes on past its end, or it holds an older
			// version's bytes (appends.go).
			f.mu.Lock()
			reuse := f.reusableLocked(d)
			f.mu.Unlock()
			if reuse {
				f.c.bufs.put(d.buf)
			}
			f.newVersion(d.idx, h, d.seq)
		}
		f.c.budget.release(f.bs)
	}()
}

// newVersion notes that version seq of block idx was uploaded as h, and
// lets go of the older version (forgetVersion).
func (f *file) newVersion(idx uint64, h block.Hash, seq uint64) {
	f.mu.Lock()
	old, ok := f.versions[idx]
	if ok && old.seq > seq {
		f.mu.Unlock()
		f.forgetVersion(h) // a newer version was uploaded already
		return
	}
	if f.versions == nil {
		f.versions = make(map[uint64]version)
	}
	f.versions[idx] = version{h: h, seq: seq}
	f.mu.Unlock()
	if ok && old.h != h {
		f.forgetVersion(old.h)
	}
}

// forgetVersion lets go of what the client keeps of version h of a block
// this file replaced: its buffer in the memory cache and its segment sums
// (each upload learns them; kept until the table's bound pushed them out,
// they were most of an idle daemon's heap after fsx). Another file with
// the same content reads it again from the servers, verified in full.
func (f *file) forgetVersion(h block.Hash) {
	f.c.mem.drop(h)
	f.c.sums.forget(h)
}

func (f *file) uploadDone(d *dblock, h block.Hash, comp *meta.Composition, rep *replication, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nInflight--
	if rep != nil && err == nil {
		if len(f.repls) >= 64 {
			f.repls = pruneDone(f.repls)
		}
		f.repls = append(f.repls, rep)
	}
	if f.inflight[d.idx] == d {
		delete(f.inflight, d.idx)
	}
	if err != nil {
		wait := uploadBackoff.Delay(f.failures)
		f.failures++
		f.c.uploadFailed.Log(f.c.log, slog.LevelError, "block upload failed; data kept for the next fsync",
			"inode", f.ino, "block", d.idx, "retry_in", wait, "err", err)
		if f.err == nil {
			f.err = err
		}
		if _, newer := f.dirty[d.idx]; !newer && f.pending[d.idx].seq < d.seq {
			f.failedTailLocked(d)
			f.c.budget.force(f.bs)
			d.retryAt = time.Now().Add(wait)
			f.dirty[d.idx] = d
		}
	} else {
		f.failures = 0
		f.uploadedTailLocked(d, h)
		if p, ok := f.pending[d.idx]; !ok || p.seq < d.seq {
			if ok && p.h != h {
				f.supersedePendLocked(p)
			}
			f.pending[d.idx] = pend{h: h, seq: d.seq, at: f.c.cfg.Clock.Now(), comp: comp, base: d.base}
			if comp != nil {
				f.learnCompsLocked(map[block.Hash]meta.Composition{h: *comp})
			}
		} else if p.h != h {
			// A newer version was uploaded first.
			f.supersedePendLocked(pend{h: h, comp: comp})
		}
	}
	f.cond.Broadcast()
}

// supersedeLocked notes that upload h will not be committed (see
// file.superseded); past meta.MaxSuperseded the rest is left to the
// collector's walk.
func (f *file) supersedeLocked(h block.Hash) {
	if !h.IsZero() && len(f.superseded) < meta.MaxSuperseded {
		f.superseded = append(f.superseded, h)
	}
}

// supersedePendLocked notes that upload p will not be committed: its
// block, or for a composed one the patches it uploaded.
func (f *file) supersedePendLocked(p pend) {
	if p.comp == nil {
		f.supersedeLocked(p.h)
		return
	}
	for _, pt := range p.comp.Patches {
		f.supersedeLocked(pt.Hash)
	}
}

// pruneDone drops the replications that have completed.
func pruneDone(reps []*replication) []*replication {
	out := reps[:0]
	for _, r := range reps {
		select {
		case <-r.done:
			if r.err != nil {
				out = append(out, r) // fsync reports it
			}
		default:
			out = append(out, r)
		}
	}
	return out
}

// dirtyFor is how long the oldest uncommitted write has waited (0 if none).
func (f *file) dirtyFor() time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.writes == 0 {
		return 0
	}
	return time.Since(f.firstWrite)
}

// waitLocked waits until no upload of this file is under way, or until ctx
// is cancelled or interrupted (interrupt.go).
func (f *file) waitLocked(ctx context.Context) error {
	if f.nInflight == 0 {
		return nil
	}
	stop := onInterrupt(ctx, func() {
		f.mu.Lock()
		f.cond.Broadcast()
		f.mu.Unlock()
	})
	defer stop()
	for f.nInflight > 0 {
		if err := interrupted(ctx); err != nil {
			return fmt.Errorf("inode %d: waiting for uploads: %w", f.ino, err)
		}
		f.cond.Wait()
	}
	return nil
}

// writeErrLocked is why a write must fail now: the file's data was lost, or
// an upload failed since the last commit (the application hears of a full
// disk at its next write, as on a local file system, not only at fsync;
// the data it wrote before stays buffered for that fsync).
func (f *file) writeErrLocked() error {
	if f.lost != nil {
		return f.lost
	}
	if f.err != nil {
		return fmt.Errorf("write inode %d: %w", f.ino, uploadErrno(f.err))
	}
	return nil
}

// uploadBackoff is how long a block whose upload failed n times before
// waits for its next try by the flusher: 100 ms doubling to 30 s.
var uploadBackoff = backoff.Policy{Base: 100 * time.Millisecond, Max: 30 * time.Second}

// uploadErrno is the errno an application sees for a failed upload: ENOSPC
// when the block servers are out of space, EIO otherwise.
func uploadErrno(err error) error {
	if errors.Is(err, block.ErrNoSpace) {
		return fmt.Errorf("%w (%w)", syscall.ENOSPC, err)
	}
	return fmt.Errorf("%w (%w)", syscall.EIO, err)
}
