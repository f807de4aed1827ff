package meta

import (
	"context"
	"fmt"
)

// Eviction (issue 14 item 7, tessera fileset evict): a fileset file whose
// content came from home gives its cached data back and becomes a
// placeholder of home's size again; its blocks' references go in the same
// transaction, so the blocks are reclaimed as any dropped data's are. A
// later read fetches it from home again.

// EvictAPI is the eviction call: *Service implements it, and so do the
// authorizing view (authz) and the RPC client (metarpc).
type EvictAPI interface {
	// EvictData drops the cached data of fileset file ino (see
	// Service.EvictData).
	//tessera:authz cache cluster: admins and gateways
	EvictData(ctx context.Context, ino Ino) (Inode, error)
}

var _ EvictAPI = (*Service)(nil)

// EvictData drops the cached data of regular file ino of a fileset and
// marks it a placeholder, keeping home's size and times. It refuses, with
// ErrDirty, a file whose data is not only home's: write-back of it
// queued, or its size or mtime no longer home's (a local change in a
// local-update fileset; a change written back has brought the record of
// home up to date: WritebackDone); with ErrInvalid a file made locally and
// not written back (nothing at home to fetch again) or outside filesets. A placeholder is returned as it is. Holders
// of a lease on ino are called back: their cached content is gone.
func (s *Service) EvictData(ctx context.Context, ino Ino) (Inode, error) {
	var out Inode
	pending := false
	// As a truncate: the recipe is dropped a segment per transaction
	// (segment.go); what the bound leaves of it is a pending drop,
	// finished below. The file is a placeholder from the first
	// transaction on, so readers ask home (through a gateway), and the
	// gateway's commit of what it fetched finishes the drop first.
	err := s.updateTrimmed(ctx, ino, func(t txn) error {
		pending = false
		rec, err := t.getInode(ino)
		if err != nil {
			return err
		}
		sec := rec.Gateway
		switch {
		case !rec.IsRegular():
			return fmt.Errorf("not a regular file: %w", ErrInvalid)
		case sec == nil:
			return fmt.Errorf("not in a fileset: %w", ErrInvalid)
		case sec.HomePath == "":
			return fmt.Errorf("made in the cache, not read from home: %w", ErrInvalid)
		}
		out = rec.Inode
		if sec.State == CachePlaceholder {
			return nil
		}
		if op, err := t.wbLatestOp(ino); err != nil {
			return err
		} else if op != nil {
			return fmt.Errorf("write-back queued (%v %s): %w", op.Kind, Quote(op.Path), ErrDirty)
		}
		if rec.Size != sec.HomeSize || rec.Mtime != sec.HomeMtime {
			return fmt.Errorf("changed in the cache: %w", ErrDirty)
		}
		if err := t.record(edit{kind: editFileset, ino: ino, rec: rec, tell: &notice{change: change{ino: ino}}}); err != nil {
			return err
		}
		trimInline(rec, 0)
		fin, _, err := t.dropTail(ino, 0, s.soft(), s.nowNs())
		if err != nil {
			return err
		}
		if !fin {
			pending = true
			if err := t.Put(pendingKey(ino), encodePending(pendingDrop{from: 0})); err != nil {
				return err
			}
		}
		g := *sec
		g.State = CachePlaceholder
		rec.Gateway = &g
		rec.touch(s.nowNs())
		out = rec.Inode
		return t.putInode(rec)
	})
	if err == nil && pending {
		err = s.finishDrop(ctx, ino)
	}
	if err != nil {
		return Inode{}, fmt.Errorf("evict %d: %w", ino, err)
	}
	return out, nil
}
