package meta

import (
	"context"
	"errors"
	"fmt"
	"syscall"

	"tessera/internal/kv"
)

// DefaultReadDirLimit is the page size ReadDir uses when limit <= 0.
const DefaultReadDirLimit = 1024

// Lookup returns the inode name refers to in directory parent.
func (s *Service) Lookup(ctx context.Context, parent Ino, name string) (Inode, error) {
	var out Inode
	err := checkName(name)
	if err == nil {
		err = s.leasedRead(ctx, 0, func() (Ino, error) {
			err := s.view(ctx, func(t txn) error {
				rec, err := t.lookup(s.hints, parent, name)
				if err != nil {
					return err
				}
				out = rec.Inode
				return nil
			})
			if errors.Is(err, ErrNotFound) {
				s.hints.drop(parent, name)
			}
			return out.Ino, err
		})
	}
	if err != nil {
		return Inode{}, fmt.Errorf("lookup %d/%s: %w", parent, Quote(name), err)
	}
	return out, nil
}

// GetAttr returns inode ino.
func (s *Service) GetAttr(ctx context.Context, ino Ino) (Inode, error) {
	var out Inode
	err := s.leasedRead(ctx, ino, func() (Ino, error) {
		return ino, s.view(ctx, func(t txn) error {
			rec, err := t.getInode(ino)
			if err != nil {
				return err
			}
			out = rec.Inode
			return nil
		})
	})
	if err != nil {
		return Inode{}, fmt.Errorf("getattr %d: %w", ino, err)
	}
	return out, nil
}

// Create makes a file, directory, symlink or special file (see CreateReq).
func (s *Service) Create(ctx context.Context, req CreateReq) (Inode, error) {
	for {
		mark := s.readMark()
		out, again, err := s.create(ctx, req)
		if err != nil {
			return Inode{}, fmt.Errorf("create %d/%s: %w", req.Parent, Quote(req.Name), err)
		}
		if again {
			continue // the file it found went before it was held open
		}
		s.granted(ctx, out.Ino, s.recordNew(ctx, out, mark))
		return out, nil
	}
}

// create is Create. With req.Open it holds the new inode open for the
// calling session before it is linked, so no unlink can delete it before
// the caller has it open; an existing file it returns instead is held after
// the fact and checked to exist still (again: it did not, try again).
func (s *Service) create(ctx context.Context, req CreateReq) (out Inode, again bool, err error) {
	id := sessionOf(ctx)
	if !req.Open {
		id = 0
	}
	ino, err := s.allocIno(ctx)
	if err != nil {
		return Inode{}, false, err
	}
	// A fresh inode: no reap to wait for. In a shared store its open
	// record, and the lease record of the session that gains a lease on
	// it, are written by the transaction that creates it (createIno), not
	// in transactions of their own: no change can come between.
	held, err := s.leases.hold(ctx, id, ino)
	if err != nil {
		s.releaseIno(ino)
		return Inode{}, false, err
	}
	recs := newRecords{open: held && s.sh != nil, lease: s.sh != nil && sessionOf(ctx) != 0}
	out, err = s.createIno(ctx, req, ino, recs)
	if held && (err != nil || out.Ino != ino) {
		s.leases.unhold(id, ino)
	}
	if err != nil || out.Ino == ino || id == 0 {
		return out, false, err
	}
	if held, err = s.hold(ctx, id, out.Ino); err != nil || !held {
		return out, false, err
	}
	err = s.view(ctx, func(t txn) error {
		_, err := t.getInode(out.Ino)
		return err
	})
	if errors.Is(err, ErrNotFound) {
		s.leases.unhold(id, out.Ino)
		return Inode{}, true, nil
	}
	return out, false, err
}

// newRecords says which records of a shared store createIno writes with a
// new inode: this Service's open record (the caller holds it open) and
// lease record (the calling session gains a lease on it).
type newRecords struct{ open, lease bool }

// createIno makes the entry with the new inode number ino, or returns the
// regular file the name has (non-Excl). With a new inode it writes recs in
// the same transaction and notes them once it committed.
func (s *Service) createIno(ctx context.Context, req CreateReq, ino Ino, recs newRecords) (Inode, error) {
	typ := typeOf(req.Mode)
	if typ == 0 {
		typ = syscall.S_IFREG
	}
	if req.Tmpfile {
		if typ != syscall.S_IFREG {
			return Inode{}, ErrInvalid
		}
	} else if err := checkName(req.Name); err != nil {
		return Inode{}, err
	}
	if !validType(typ) {
		return Inode{}, ErrInvalid
	}
	if typ == syscall.S_IFLNK {
		if req.Target == "" {
			return Inode{}, ErrNotFound
		}
		if len(req.Target) > MaxTargetLen {
			return Inode{}, ErrNameTooLong
		}
	}
	var out Inode
	used, hint := false, false
	err := s.update(ctx, func(t txn) error {
		used = false
		var parent *inodeRec
		var old Ino
		var oldTyp uint32
		exists := false
		if err := t.prefetchCreate(req, ino); err != nil {
			return err
		}
		var err error
		if req.Tmpfile {
			parent, err = t.getDir(req.Parent)
		} else {
			parent, old, oldTyp, exists, err = t.getDirEntry(req.Parent, req.Name)
		}
		if err != nil {
			return err
		}
		if exists {
			if typ != syscall.S_IFREG || req.Excl {
				return ErrExist
			}
			if oldTyp == syscall.S_IFDIR {
				return ErrIsDir
			}
			rec, err := t.getInode(old)
			if err != nil {
				return err
			}
			out = rec.Inode
			return nil
		}
		now := s.nowNs()
		rec := &inodeRec{}
		rec.Attr = Attr{Ino: ino, Gen: 1, Mode: typ | req.Mode&07777, Uid: req.Uid, Gid: req.Gid, Nlink: 1,
			Atime: now, Mtime: now, Ctime: now, Change: 1, BlockSize: parent.BlockSize, Policy: parent.Policy,
			Replicas: parent.Replicas, Sites: parent.Sites}
		if rec.BlockSize == 0 {
			rec.BlockSize = s.blockSize
		}
		if parent.Mode&syscall.S_ISGID != 0 {
			rec.Gid = parent.Gid
			if typ == syscall.S_IFDIR {
				rec.Mode |= syscall.S_ISGID
			}
		}
		switch typ {
		case syscall.S_IFDIR:
			rec.Nlink = 2
			rec.Parent = parent.Ino
			parent.Nlink++
		case syscall.S_IFLNK:
			rec.Mode = syscall.S_IFLNK | 0777
			rec.Target = req.Target
			rec.Size = uint64(len(req.Target))
		case syscall.S_IFCHR, syscall.S_IFBLK:
			rec.Rdev = req.Rdev
		}
		if typ != syscall.S_IFDIR {
			rec.Parent = parent.Ino // see subtree.go
		}
		if parent.Gateway != nil {
			// Made locally in a fileset: nothing at home to fetch yet
			// (fileset.go).
			rec.Gateway = &GatewayInfo{Fileset: parent.Gateway.Fileset, State: CacheCached, Validated: now}
		}
		if req.Tmpfile {
			// Nameless: the directory is unchanged, and the inode is
			// an orphan until Link names it.
			rec.Nlink = 0
			if err := t.putOrphan(rec, now, true); err != nil {
				return err
			}
		} else {
			parent.touchDir(now)
			if err := t.putInode(parent); err != nil {
				return err
			}
			if err := t.putDentry(parent.Ino, req.Name, ino, typ); err != nil {
				return err
			}
		}
		if err := t.putInode(rec); err != nil {
			return err
		}
		if recs.open {
			if err := t.Put(openRecKey(ino, s.sh.id), []byte{recordV1}); err != nil {
				return err
			}
		}
		if recs.lease {
			if err := t.Put(leaseRecKey(ino, s.sh.id), []byte{recordV1}); err != nil {
				return err
			}
		}
		name := req.Name
		if req.Tmpfile {
			name = ""
		}
		if err := t.record(edit{kind: editCreate, ino: ino, rec: rec, dir: parent.Ino, name: name}); err != nil {
			return err
		}
		out = rec.Inode
		used = true
		hint = !req.Tmpfile && t.multiGets()
		return nil
	})
	if !used {
		s.releaseIno(ino)
	} else if err == nil {
		s.notedNew(ino, recs)
		if hint {
			s.hints.put(req.Parent, req.Name, ino)
		}
	}
	return out, err
}

// Link adds the name newParent/newName for the non-directory ino.
func (s *Service) Link(ctx context.Context, ino, newParent Ino, newName string) (Inode, error) {
	var out Inode
	err := checkName(newName)
	if err == nil {
		err = s.update(ctx, func(t txn) error {
			parent, err := t.getDir(newParent)
			if err != nil {
				return err
			}
			rec, err := t.getInode(ino)
			if err != nil {
				return err
			}
			if _, _, exists, err := t.getDentry(newParent, newName); err != nil {
				return err
			} else if exists {
				return ErrExist
			}
			switch {
			case rec.IsDir():
				return ErrPerm
			case rec.Nlink >= MaxLink:
				return ErrTooManyLink
			}
			if rec.Nlink == 0 {
				// Only an O_TMPFILE inode gets a name (linkat);
				// an unlinked file stays unlinked.
				if err := t.linkOrphan(rec); err != nil {
					return err
				}
			}
			was := rec.Parent
			if err := t.linkAdded(rec, newParent); err != nil {
				return err
			}
			now := s.nowNs()
			rec.Nlink++
			rec.touch(now)
			parent.touchDir(now)
			if err := t.putDentry(newParent, newName, ino, rec.Mode); err != nil {
				return err
			}
			if err := t.putInode(parent); err != nil {
				return err
			}
			out = rec.Inode
			if err := t.record(edit{kind: editLink, ino: ino, rec: rec, dir: newParent, name: newName, was: was,
				tell: &notice{change: change{ino: ino, inode: &out}}}); err != nil {
				return err
			}
			return t.putInode(rec)
		})
	}
	if err != nil {
		return Inode{}, fmt.Errorf("link %d to %d/%s: %w", ino, newParent, Quote(newName), err)
	}
	return out, nil
}

// Unlink removes the non-directory entry parent/name. An inode whose last
// link goes becomes an orphan (see Reap), unless reap names it and no live
// session has it open (HoldOpen): then it is deleted in the same
// transaction.
func (s *Service) Unlink(ctx context.Context, parent Ino, name string, reap Ino) (Inode, error) {
	var out Inode
	cl := s.newClaims()
	deleted := false
	err := checkName(name)
	if err == nil {
		err = s.update(ctx, func(t txn) error {
			if err := t.prefetchEntry(parent, name); err != nil {
				return err
			}
			dir, ino, typ, ok, err := t.getDirEntry(parent, name)
			if err != nil {
				return err
			}
			if !ok {
				return ErrNotFound
			}
			if typ == syscall.S_IFDIR {
				return ErrIsDir
			}
			if err := t.prefetchRemoval(ino); err != nil {
				return err
			}
			rec, err := t.getInode(ino)
			if err != nil {
				return err
			}
			now := s.nowNs()
			deleted = false
			// A file too large to delete within one transaction becomes
			// an orphan here and is reaped in segments below.
			fits := false
			if rec.Nlink <= 1 && reap != 0 && reap == ino {
				if fits, err = s.fitsOneTxn(t, rec); err != nil {
					return err
				}
			}
			if fits && cl.claim(t, ino) {
				rec.Nlink = 0
				// Linked until now, and fitsOneTxn saw no pending drop
				// of a regular file.
				if err := t.deleteInode(rec, now, rec.IsRegular()); err != nil {
					return err
				}
				deleted = true
			} else if err := t.dropLink(rec, parent, now); err != nil {
				return err
			} else if rec.Nlink == 0 {
				s.leases.orphaned(ino) // before the commit: a last release may follow it at once
			}
			if err := t.Delete(dentryKey(parent, name)); err != nil {
				return err
			}
			dir.touchDir(now)
			out = rec.Inode
			tell := &notice{change: change{ino: ino, inode: &out}, gone: out.Nlink == 0}
			if err := t.record(edit{kind: editRemove, ino: ino, rec: rec, dir: parent, name: name, tell: tell}); err != nil {
				return err
			}
			return t.putInode(dir)
		})
	}
	cl.end(err == nil)
	if err != nil {
		return Inode{}, fmt.Errorf("unlink %d/%s: %w", parent, Quote(name), err)
	}
	if out.Nlink == 0 && !deleted {
		// Held open when the transaction looked. Mark it again (a release
		// between the mark above and the commit found it still linked
		// and forgot it), and reap it now if that release was the last.
		s.leases.orphaned(out.Ino)
		if reap == out.Ino {
			// The unlink is done: a failure here leaves the orphan
			// to the reaper.
			_, _ = s.reap(ctx, out.Ino)
		}
	}
	return out, nil
}

// dropLink takes from the non-directory rec its link in directory dir and
// stores it, marking it an orphan when none are left (links.go keeps its
// parent pointer right).
func (t txn) dropLink(rec *inodeRec, dir Ino, now int64) error {
	if rec.Nlink > 0 {
		rec.Nlink--
	}
	if err := t.linkDropped(rec, dir); err != nil {
		return err
	}
	rec.touch(now)
	if rec.Nlink == 0 {
		if err := t.putOrphan(rec, now, false); err != nil {
			return err
		}
	}
	return t.putInode(rec)
}

// linkOrphan takes the orphan marker off rec, which is about to get a
// name, if it is linkable (CreateReq.Tmpfile); else it is ErrNotFound.
func (t txn) linkOrphan(rec *inodeRec) error {
	v, ok, err := t.Get(orphanKey(rec.Ino))
	if err != nil {
		return err
	}
	if !ok {
		return ErrNotFound
	}
	if _, linkable, err := decodeOrphan(v); err != nil || !linkable {
		if err == nil {
			err = ErrNotFound
		}
		return err
	}
	if reaping, err := t.beingReaped(rec.Ino); err != nil || reaping {
		if err == nil {
			err = ErrNotFound
		}
		return err
	}
	return t.unorphan(rec)
}

// Rmdir removes the empty directory parent/name.
func (s *Service) Rmdir(ctx context.Context, parent Ino, name string) error {
	cl := s.newClaims()
	err := checkName(name)
	if err == nil {
		err = s.update(ctx, func(t txn) error {
			dir, ino, typ, ok, err := t.getDirEntry(parent, name)
			if err != nil {
				return err
			}
			if !ok {
				return ErrNotFound
			}
			if typ != syscall.S_IFDIR {
				return ErrNotDir
			}
			if err := t.removeDir(ino, s.keepDir(t, cl, ino), s.nowNs()); err != nil {
				return err
			}
			if err := t.Delete(dentryKey(parent, name)); err != nil {
				return err
			}
			dir.Nlink--
			dir.touchDir(s.nowNs())
			tell := &notice{change: change{ino: ino}, quiet: true, gone: true}
			if err := t.record(edit{kind: editRemove, ino: ino, dir: parent, name: name, isDir: true, tell: tell}); err != nil {
				return err
			}
			return t.putInode(dir)
		})
	}
	cl.end(err == nil)
	if err != nil {
		return fmt.Errorf("rmdir %d/%s: %w", parent, Quote(name), err)
	}
	return nil
}

// removeDir deletes the empty directory ino (its inode and xattrs), or with
// keep makes it an orphan (Nlink 0) that stays while some session has it
// open; the caller deals with the entry and the parent.
func (t txn) removeDir(ino Ino, keep bool, now int64) error {
	empty, err := t.dirEmpty(ino)
	if err != nil {
		return err
	}
	if !empty {
		return ErrNotEmpty
	}
	if keep {
		rec, err := t.getInode(ino)
		if err != nil {
			return err
		}
		rec.Nlink = 0
		rec.touch(now)
		if err := t.putOrphan(rec, now, false); err != nil {
			return err
		}
		return t.putInode(rec)
	}
	rec, err := t.getInode(ino)
	if err != nil {
		return err
	}
	if err := t.reparentOrphans(ino, rec.Parent); err != nil {
		return err
	}
	if err := t.deletePrefix(xattrPrefix(ino)); err != nil {
		return err
	}
	if err := t.Delete(inodeKey(ino)); err != nil {
		return err
	}
	return t.record(edit{kind: editDelete, ino: ino, rec: rec})
}

// keepDir reports whether a directory being removed must stay as an orphan
// (a session has it open, or the service is in its restart grace) and
// records it as one.
func (s *Service) keepDir(t txn, cl *claims, ino Ino) bool {
	if cl.claim(t, ino) {
		return false
	}
	s.leases.orphaned(ino)
	return true
}

// ReadDir lists the entries of dir after `after` in name order, at most
// limit (DefaultReadDirLimit when limit <= 0). It never lists "." or "..".
func (s *Service) ReadDir(ctx context.Context, dir Ino, after string, limit int, plus bool) ([]DirEntry, bool, error) {
	if limit <= 0 {
		limit = DefaultReadDirLimit
	}
	var ents []DirEntry
	more := false
	err := s.view(ctx, func(t txn) error {
		ents, more = ents[:0], false
		// Not getDir: a removed directory held open lists as empty.
		rec, err := t.getInode(dir)
		if err != nil {
			return err
		}
		if !rec.IsDir() {
			return fmt.Errorf("inode %d: %w", dir, ErrNotDir)
		}
		p := dentryPrefix(dir)
		start := p
		if after != "" {
			start = append(dentryKey(dir, after), 0)
		}
		err = t.Scan(start, kv.PrefixEnd(p), func(k, v []byte) (bool, error) {
			if len(ents) == limit {
				more = true
				return false, nil
			}
			_, name, err := parseDentryKey(k)
			if err != nil {
				return false, err
			}
			ino, typ, err := decodeDentry(v)
			if err != nil {
				return false, err
			}
			ents = append(ents, DirEntry{Name: name, Ino: ino, Mode: typ})
			return true, nil
		})
		if err != nil || !plus {
			return err
		}
		return t.fillInodes(ents)
	})
	if err != nil {
		return nil, false, fmt.Errorf("readdir %d after %s: %w", dir, Quote(after), err)
	}
	return ents, more, nil
}
