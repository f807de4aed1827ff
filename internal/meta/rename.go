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
		op, err := t.getDir(oldParent)
		if err != nil {
			return err
		}
		np := op
		if newParent != oldParent {
			if np, err = t.getDir(newParent); err != nil {
				return err
			}
		}
		srcIno, srcTyp, ok, err := t.getDentry(oldParent, oldName)
		if err != nil {
			return err
		}
		if !ok {
			return ErrNotFound
		}
		dstIno, dstTyp, dstOk, err := t.getDentry(newParent, newName)
		if err != nil {
			return err
		}
		switch {
		case flags&RenameNoReplace != 0 && dstOk:
			return ErrExist
		case exchange && !dstOk:
			return ErrNotFound
		}
		crossDir := oldParent != newParent
		if crossDir && srcTyp == syscall.S_IFDIR {
			if err := t.checkNotUnder(newParent, srcIno); err != nil {
				return err
			}
		}
		if crossDir && exchange && dstTyp == syscall.S_IFDIR {
			if err := t.checkNotUnder(oldParent, dstIno); err != nil {
				return err
			}
		}
		if dstOk && dstIno == srcIno {
			return nil
		}
		if dstOk && !exchange {
			switch {
			case srcTyp == syscall.S_IFDIR && dstTyp != syscall.S_IFDIR:
				return ErrNotDir
			case srcTyp != syscall.S_IFDIR && dstTyp == syscall.S_IFDIR:
				return ErrIsDir
			}
		}
		src, err := t.getInode(srcIno)
		if err != nil {
			return err
		}
		now := s.nowNs()
		if exchange {
			dst, err := t.getInode(dstIno)
			if err != nil {
				return err
			}
			if crossDir {
				if err := t.moveDir(src, op, np); err != nil {
					return err
				}
				if err := t.moveDir(dst, np, op); err != nil {
					return err
				}
			}
			dst.touch(now)
			if err := t.putInode(dst); err != nil {
				return err
			}
			if err := t.putDentry(oldParent, oldName, dstIno, dstTyp); err != nil {
				return err
			}
		} else {
			if dstOk {
				keep := dstTyp == syscall.S_IFDIR && s.keepDir(t, cl, dstIno)
				if replaced, err = t.replaceTarget(dstIno, dstTyp, np, now, keep); err != nil {
					return err
				}
				if replaced.Nlink == 0 {
					s.leases.orphaned(dstIno)
				}
			}
			if crossDir {
				if err := t.moveDir(src, op, np); err != nil {
					return err
				}
			}
			if err := t.Delete(dentryKey(oldParent, oldName)); err != nil {
				return err
			}
		}
		if err := t.putDentry(newParent, newName, srcIno, srcTyp); err != nil {
			return err
		}
		src.touch(now)
		if err := t.putInode(src); err != nil {
			return err
		}
		op.touchDir(now)
		if err := t.putInode(op); err != nil {
			return err
		}
		e := edit{kind: editRename, ino: srcIno, rec: src, dir: oldParent, name: oldName, to: newParent, toName: newName,
			isDir: srcTyp == syscall.S_IFDIR, exchange: exchange}
		if dstOk && !exchange {
			e.replaced = dstIno
			// Its holders hear of it: it lost a name (and may be gone).
			e.tell = &notice{change: change{ino: dstIno, inode: &replaced}}
		}
		if err := t.record(e); err != nil {
			return err
		}
		if crossDir {
			np.touchDir(now)
			return t.putInode(np)
		}
		return nil
	})
	return replaced, err
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
