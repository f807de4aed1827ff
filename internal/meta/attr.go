package meta

import (
	"context"
	"fmt"
)

// SetAttr changes the attributes named in req.Valid. A size change truncates
// or extends the file (extension leaves a hole); ctime becomes req.Ctime, or
// now when that is 0, whenever anything changes.
func (s *Service) SetAttr(ctx context.Context, ino Ino, req SetAttrReq) (Inode, error) {
	mark := s.leaseMark(ctx, ino)
	var out Inode
	// Holders are called back inside the Sync change (see Commit).
	err := s.syncChange(ctx, ino, req.Sync && req.Valid != 0, func() error {
		return s.setAttr(ctx, ino, req, mark, &out)
	})
	if err != nil {
		return Inode{}, fmt.Errorf("setattr %d: %w", ino, err)
	}
	if req.Valid == 0 {
		s.granted(ctx, ino, mark)
	}
	return out, nil
}

// setAttr is SetAttr; mark is the lease mark its caller gains a lease
// with.
func (s *Service) setAttr(ctx context.Context, ino Ino, req SetAttrReq, mark uint64, outp *Inode) error {
	var out Inode
	defer func() { *outp = out }()
	pending := false
	run := s.update
	if req.Valid&SetSize != 0 {
		// A change of size must not expose (growing) or count on
		// (shrinking) entries a cut left past the end: updateTrimmed
		// drops them first.
		run = func(ctx context.Context, fn func(t txn) error) error { return s.updateTrimmed(ctx, ino, fn) }
	}
	err := run(ctx, func(t txn) error {
		pending = false
		rec, err := t.getInode(ino)
		if err != nil {
			return err
		}
		if req.Valid&SetSize != 0 && !rec.IsRegular() {
			if rec.IsDir() {
				return ErrIsDir
			}
			return ErrInvalid
		}
		out = rec.Inode
		if req.Valid == 0 {
			return nil
		}
		if req.Valid&SetMode != 0 {
			rec.Mode = typeOf(rec.Mode) | req.Mode&07777
		}
		if req.Valid&SetUid != 0 {
			rec.Uid = req.Uid
		}
		if req.Valid&SetGid != 0 {
			rec.Gid = req.Gid
		}
		if req.Valid&SetAtime != 0 {
			rec.Atime = req.Atime
		}
		if req.Valid&SetMtime != 0 {
			rec.Mtime = req.Mtime
		}
		var delta int64
		if req.Valid&SetSize != 0 && req.Size != rec.Size {
			if req.Size < rec.Size {
				// The size changes here, in the first transaction: no
				// reader sees an entry past it. What the bound leaves
				// of the cut is a pending drop, finished below.
				trimInline(rec, req.Size)
				from := ceilDiv(req.Size, uint64(rec.BlockSize))
				fin, _, err := t.dropTail(ino, from, s.soft(), s.nowNs())
				if err != nil {
					return err
				}
				if !fin {
					pending = true
					if err := t.Put(pendingKey(ino), encodePending(pendingDrop{from: from})); err != nil {
						return err
					}
				}
			}
			delta = int64(req.Size - rec.Size)
			rec.Size = req.Size
		}
		rec.touch(s.nowNs())
		if req.Valid&SetCtime != 0 && req.Ctime != 0 {
			rec.Ctime = req.Ctime
		}
		out = rec.Inode
		tell := &notice{change: change{ino: ino, since: mark, keep: true, inode: &out, setSize: req.Valid&SetSize != 0},
			sync: req.Sync}
		if err := t.record(edit{kind: editAttr, ino: ino, rec: rec, valid: req.Valid, sizeDelta: delta, tell: tell}); err != nil {
			return err
		}
		return t.putInode(rec)
	})
	if err == nil && pending {
		err = s.finishDrop(ctx, ino)
	}
	return err
}
