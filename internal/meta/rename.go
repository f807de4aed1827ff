package meta

import (
	"context"
	"fmt"
	"syscall"
)

// maxDepth bounds the walk up the parent pointers, so a corrupt cycle ends.
const maxDepth = 1 << 16

// Rename moves oldParent/oldName to newParent/newName, as renameat2(2) with
// flags RenameNoReplace or RenameExchange. The checks run in Linux's order:
// ENOENT, EEXIST (no-replace), ENOENT of the target (exchange), EINVAL (a
// directory into its own subtree), same inode (success, no change), then
// ENOTDIR/EISDIR and ENOTEMPTY for the target. It returns the inode it
// replaced as it is after (a replaced directory is gone and has Nlink 0);
// Ino 0 when it replaced nothing, which includes every exchange.
func (s *Service) Rename(ctx context.Context, oldParent Ino, oldName string, newParent Ino, newName string, flags uint32) (Inode, error) {
	replaced, err := s.rename(ctx, oldParent, oldName, newParent, newName, flags)
	if err != nil {
		return Inode{}, fmt.Errorf("rename %d/%s to %d/%s: %w", oldParent, Quote(oldName), newParent, Quote(newName), err)
	}
	return replaced, nil
}

func (s *Service) rename(ctx context.Context, oldParent Ino, oldName string, newParent Ino, newName string, flags uint32) (_ Inode, err error) {
	if flags&^(RenameNoReplace|RenameExchange) != 0 || flags == RenameNoReplace|RenameExchange {
		return Inode{}, ErrInvalid
	}
	if err := checkName(oldName); err != nil {
		return Inode{}, err
	}
	if err := checkName(newName); err != nil {
		return Inode{}, err
	}
	exchange := flags&RenameExchange != 0
	var replaced Inode
	cl := s.newClaims()
	defer func() { cl.end(err == nil) }()
	err = s.update(ctx, func(t txn) error {
		replaced = Inode{}
		e := renameEnds{oldParent: oldParent, oldName: oldName, newParent: newParent, newName: newName, exchange: exchange}
		same, err := t.readRenameEnds(&e, flags)
		if err != nil || same {
			return err
		}
		src, err := t.getInode(e.srcIno)
		if err != nil {
			return err
		}
		now := s.nowNs()
		if exchange {
			err = t.exchangeEnds(&e, src, now)
		} else {
			replaced, err = s.moveOver(t, cl, &e, src, now)
		}
		if err != nil {
			return err
		}
		return t.placeRenamed(&e, src, replaced, now)
	})
	return replaced, err
}

// renameEnds is what a rename found at its two ends.
type renameEnds struct {
	oldParent, newParent Ino
	oldName, newName     string
	exchange             bool
	op, np               *inodeRec // the old and new parent directories (one when the same)
	srcIno, dstIno       Ino
	srcTyp, dstTyp       uint32
	dstOk, crossDir      bool
}

// readRenameEnds reads both parents and both names into e and makes the
// checks that need no inode, in Linux's order (see Rename); same reports
// a rename onto another name of the same inode: success, no change.
func (t txn) readRenameEnds(e *renameEnds, flags uint32) (same bool, err error) {
	if e.op, err = t.getDir(e.oldParent); err != nil {
		return false, err
	}
	e.np = e.op
	if e.newParent != e.oldParent {
		if e.np, err = t.getDir(e.newParent); err != nil {
			return false, err
		}
	}
	var ok bool
	if e.srcIno, e.srcTyp, ok, err = t.getDentry(e.oldParent, e.oldName); err != nil {
		return false, err
	}
	if !ok {
		return false, ErrNotFound
	}
	if e.dstIno, e.dstTyp, e.dstOk, err = t.getDentry(e.newParent, e.newName); err != nil {
		return false, err
	}
	switch {
	case flags&RenameNoReplace != 0 && e.dstOk:
		return false, ErrExist
	case e.exchange && !e.dstOk:
		return false, ErrNotFound
	}
	e.crossDir = e.oldParent != e.newParent
	if e.crossDir && e.srcTyp == syscall.S_IFDIR {
		if err := t.checkNotUnder(e.newParent, e.srcIno); err != nil {
			return false, err
		}
	}
	if e.crossDir && e.exchange && e.dstTyp == syscall.S_IFDIR {
		if err := t.checkNotUnder(e.oldParent, e.dstIno); err != nil {
			return false, err
		}
	}
	if e.dstOk && e.dstIno == e.srcIno {
		return true, nil
	}
	if e.dstOk && !e.exchange {
		switch {
		case e.srcTyp == syscall.S_IFDIR && e.dstTyp != syscall.S_IFDIR:
			return false, ErrNotDir
		case e.srcTyp != syscall.S_IFDIR && e.dstTyp == syscall.S_IFDIR:
			return false, ErrIsDir
		}
	}
	return false, nil
}

// exchangeEnds is RENAME_EXCHANGE's half that moves the target: it goes
// to the old name (and, across directories, both parent pointers move).
func (t txn) exchangeEnds(e *renameEnds, src *inodeRec, now int64) error {
	dst, err := t.getInode(e.dstIno)
	if err != nil {
		return err
	}
	if e.crossDir {
		if err := t.moveDir(src, e.op, e.np); err != nil {
			return err
		}
		if err := t.moveDir(dst, e.np, e.op); err != nil {
			return err
		}
	}
	dst.touch(now)
	if err := t.putInode(dst); err != nil {
		return err
	}
	return t.putDentry(e.oldParent, e.oldName, e.dstIno, e.dstTyp)
}

// moveOver is a plain rename's half that clears the way: the target, if
// any, loses its name (replaced: it as it is after; Ino 0 when none), the
// source's parent pointer moves across directories, and the old name goes.
func (s *Service) moveOver(t txn, cl *claims, e *renameEnds, src *inodeRec, now int64) (replaced Inode, err error) {
	if e.dstOk {
		keep := e.dstTyp == syscall.S_IFDIR && s.keepDir(t, cl, e.dstIno)
		if replaced, err = t.replaceTarget(e.dstIno, e.dstTyp, e.np, now, keep); err != nil {
			return Inode{}, err
		}
		if replaced.Nlink == 0 {
			s.leases.orphaned(e.dstIno)
		}
	}
	if e.crossDir {
		if err := t.moveDir(src, e.op, e.np); err != nil {
			return Inode{}, err
		}
	}
	return replaced, t.Delete(dentryKey(e.oldParent, e.oldName))
}

// placeRenamed gives the source its new name, touches it and the parents,
// and records the change for the pipeline's hooks.
func (t txn) placeRenamed(e *renameEnds, src *inodeRec, replaced Inode, now int64) error {
	if err := t.putDentry(e.newParent, e.newName, e.srcIno, e.srcTyp); err != nil {
		return err
	}
	src.touch(now)
	if err := t.putInode(src); err != nil {
		return err
	}
	e.op.touchDir(now)
	if err := t.putInode(e.op); err != nil {
		return err
	}
	ed := edit{kind: editRename, ino: e.srcIno, rec: src, dir: e.oldParent, name: e.oldName, to: e.newParent, toName: e.newName,
		isDir: e.srcTyp == syscall.S_IFDIR, exchange: e.exchange}
	if e.dstOk && !e.exchange {
		ed.replaced = e.dstIno
		// Its holders hear of it: it lost a name (and may be gone).
		ed.tell = &notice{change: change{ino: e.dstIno, inode: &replaced}}
	}
	if err := t.record(ed); err != nil {
		return err
	}
	if e.crossDir {
		e.np.touchDir(now)
		return t.putInode(e.np)
	}
	return nil
}

// moveDir updates the parent pointer of rec, which moves from directory
// from to directory to, and for a directory the parents' link counts; for
// a non-directory its link records (links.go).
func (t txn) moveDir(rec, from, to *inodeRec) error {
	if !rec.IsDir() {
		return t.linkMoved(rec, from.Ino, to.Ino)
	}
	rec.Parent = to.Ino
	from.Nlink--
	to.Nlink++
	return nil
}

// replaceTarget drops the entry a rename overwrites: an empty directory goes
// (taking a link from its parent np; with keep it stays as an orphan, see
// removeDir), a non-directory loses a link.
func (t txn) replaceTarget(ino Ino, typ uint32, np *inodeRec, now int64, keep bool) (Inode, error) {
	rec, err := t.getInode(ino)
	if err != nil {
		return Inode{}, err
	}
	if typ == syscall.S_IFDIR {
		if err := t.removeDir(ino, keep, now); err != nil {
			return Inode{}, err
		}
		np.Nlink--
		rec.Nlink = 0
		rec.touch(now)
		return rec.Inode, nil
	}
	if err := t.dropLink(rec, np.Ino, now); err != nil {
		return Inode{}, err
	}
	return rec.Inode, nil
}

// checkNotUnder fails with ErrInvalid when directory dir is ino or lies
// under it, walking up the parent pointers.
func (t txn) checkNotUnder(dir, ino Ino) error {
	for range maxDepth {
		if dir == ino {
			return ErrInvalid
		}
		if dir == RootIno {
			return nil
		}
		rec, err := t.getInode(dir)
		if err != nil {
			return err
		}
		dir = rec.Parent
	}
	return corruptf("directory %d: parent chain longer than %d", dir, maxDepth)
}
