package client

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"time"

	"tessera/internal/block"
	"tessera/internal/meta"
)

// Blocks uploaded a while before their commit are touched first.
//
// The collector (tessera gc, the meta role's background run) removes
// blocks no recipe names that were last written before its cutoff (now
// minus --gc-grace). An upload waiting for its commit is named by no recipe
// yet: a client that could not commit for longer than the grace (cut off
// from the meta service) would come back and commit the names of removed
// blocks — a close or fsync reporting success for data that is gone. So
// before a commit names blocks uploaded more than DefaultTouchAfter ago,
// the client asks every block server to touch them (block.Toucher: mark
// as just written, so that a removal with an older cutoff spares them) and
// fails the commit with EIO, naming them, if every server says it holds
// none of a block's copies. A block no answering server holds while some
// server did not answer may be on that one: it is committed, as before.

// DefaultTouchAfter is Config.TouchAfter's default: older uploads are
// touched before their commit. --gc-grace must be longer than it plus the
// longest commit.
const DefaultTouchAfter = time.Second

// touchOldLocked touches the pending blocks uploaded more than
// Config.TouchAfter ago. If some are gone from every server, the writes
// since the last commit are lost: the file goes back to its committed
// state (not a recipe with holes where the data was) and the commit fails
// with EIO naming them. f.mu held, uploads finished (waitLocked).
func (f *file) touchOldLocked(ctx context.Context) error {
	cutoff := f.c.cfg.Clock.Now().Add(-f.c.cfg.TouchAfter)
	var hs []block.Hash
	var idxs []uint64
	for idx, p := range f.pending {
		if p.h.IsZero() || (p.at.IsZero() || !p.at.Before(cutoff)) && !f.inheritsUnvouchedLocked(p) {
			continue
		}
		if p.comp != nil {
			// Stored as pieces: those are what must still be there.
			for _, ph := range p.comp.Pieces() {
				hs = append(hs, ph)
				idxs = append(idxs, idx)
			}
			continue
		}
		hs = append(hs, p.h)
		idxs = append(idxs, idx)
	}
	if len(hs) == 0 {
		return nil
	}
	gone := f.c.router.touch(ctx, hs)
	if len(gone) == 0 {
		return nil
	}
	var oldest time.Time
	for i, h := range hs {
		if at := f.pending[idxs[i]].at; gone[h] && (oldest.IsZero() || at.Before(oldest)) {
			oldest = at
		}
	}
	first := ""
	for h := range gone {
		first = h.Short()
		break
	}
	err := fmt.Errorf("commit inode %d: %w: %d block(s) uploaded up to %v ago (%s...) are on no block server: collected before this client could commit them",
		f.ino, syscall.EIO, len(gone), f.c.cfg.Clock.Now().Sub(oldest).Round(time.Second), first)
	f.c.log.Error("uncommitted data lost", "ino", f.ino, "blocks", len(gone), "err", err)
	f.loseLocked(err)
	return err
}

// inheritsUnvouchedLocked reports whether p's composition carries pieces
// of the committed version it was made on (its base and patches, flattened)
// that this client no longer knows to be live: that version's composition
// left the client-wide cache, as it does when it is stored whole and its
// pieces released (compaction, here or by another client). A commit naming
// them after the reclaimer removed them would acknowledge data that is
// gone, however recent the new patches are; so they are touched first,
// which spares them, or fails the commit with EIO when they are gone.
func (f *file) inheritsUnvouchedLocked(p pend) bool {
	if p.comp == nil || !p.base.oldSet || p.comp.Base == p.base.old {
		return false // stored whole, or composed over a whole block
	}
	_, known := f.c.comps.get(p.base.old)
	return !known
}

// touchTimeout bounds the touch before a commit.
const touchTimeout = 2 * time.Second

// touch asks every block server not known down to touch hs (block.Toucher;
// Has for a store that cannot) and returns the blocks that every server of
// the map answered it does not hold — none when a server is down or did
// not answer, since it may hold them.
func (r *router) touch(ctx context.Context, hs []block.Hash) map[block.Hash]bool {
	r.mu.RLock()
	stores := make([]block.Store, 0, len(r.mu.ids))
	complete := true
	for _, id := range r.mu.ids {
		st := r.mu.stores[id]
		if st == nil || r.mu.servers[id].State == meta.StateDown {
			complete = false
			continue
		}
		stores = append(stores, st)
	}
	r.mu.RUnlock()
	ctx, cancel := context.WithTimeout(ctx, touchTimeout)
	defer cancel()
	held := make([]bool, len(hs))
	answered := 0
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, st := range stores {
		wg.Go(func() {
			var has []bool
			var err error
			if t, ok := st.(block.Toucher); ok {
				has, err = t.Touch(ctx, hs)
			} else {
				has, err = st.Has(ctx, hs)
			}
			if err != nil || len(has) != len(hs) {
				r.log.Warn("touch before commit: a block server did not answer", "err", err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			answered++
			for i, ok := range has {
				held[i] = held[i] || ok
			}
		})
	}
	wg.Wait()
	if !complete || answered < len(stores) || answered == 0 {
		return nil // a block not found may be on a server that did not answer
	}
	gone := make(map[block.Hash]bool)
	for i, ok := range held {
		if !ok {
			gone[hs[i]] = true
		}
	}
	return gone
}

// discardLocked drops what this client wrote since its last commit, once
// its uploads are finished: the file is as last committed. The dirty blocks
// go too: committed without the lost ones, they would leave holes (zeros
// read back) where acknowledged writes were.
func (f *file) discardLocked() {
	for idx := range f.dirty {
		delete(f.dirty, idx)
		f.c.budget.release(f.bs)
	}
	f.pending = make(map[uint64]pend)
	f.repls = nil
	f.err = nil
	f.size = f.committedSize
	f.truncated = false
	f.metaDirty = false
	f.mtime = 0
	f.writes = 0
	f.doubt = false
}

// dropFailedWrite is called when a write that was to be committed before
// it returned (commit per write, O_SYNC, O_DSYNC) failed its commit. Its
// bytes must not outlive the failure: kept, this client's reads would
// return them though no committed version holds them (and other clients
// read another), and a later commit would apply them long after the write
// failed. Alone uncommitted, they are dropped and the file is as last
// committed; mixed with other descriptors' buffered writes, which cannot
// be told apart, all are lost (loseLocked). The file is read afresh at its
// next use: the commit may have been applied all the same.
func (f *file) dropFailedWrite(ctx context.Context, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.lost != nil || f.cleanLocked() {
		f.stale = true
		return
	}
	f.waitLocked(context.WithoutCancel(ctx))
	if f.writes <= 1 && !f.truncated {
		f.discardLocked()
	} else {
		f.c.log.Error("write: buffered writes dropped with a synchronous write whose commit failed", "inode", f.ino, "err", err)
		f.loseLocked(err)
	}
	f.stale = true
}

// loseLocked discards the uncommitted writes (discardLocked) and makes every
// later write and commit of the file in this client fail with err until
// it is closed: writes the application made after the lost ones must not be
// committed as if the file had holes there.
func (f *file) loseLocked(err error) {
	f.discardLocked()
	f.lost = fmt.Errorf("inode %d: %w: writes since the last commit were lost (%v); the file is as last committed until every descriptor of it is closed", f.ino, syscall.EIO, err)
}
