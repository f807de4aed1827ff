package meta

import (
	"encoding/binary"
	"errors"

	"tessera/internal/kv"
)

// Link records. A non-directory with one link keeps that link's directory
// in its inode record's parent pointer. One with several keeps, besides,
// a "p" ino dir record per directory holding some of its links, with how
// many: enough to tell, when a link goes, which directory the pointer
// moves to, and for Within to find a hard link inside a subtree whatever
// the pointer names. Only hard-linked files pay for them.

// linksPrefix is "p" ino.
func linksPrefix(ino Ino) []byte { return inoKey(pfxLinks, ino) }

// linksKey is "p" ino dir.
func linksKey(ino, dir Ino) []byte {
	return binary.BigEndian.AppendUint64(linksPrefix(ino), uint64(dir))
}

// linkDirs returns the directories holding links to ino and how many each,
// from its link records (empty unless it has several links).
func (t txn) linkDirs(ino Ino) (map[Ino]uint64, error) {
	p := linksPrefix(ino)
	dirs := map[Ino]uint64{}
	err := t.Scan(p, kv.PrefixEnd(p), func(k, v []byte) (bool, error) {
		if len(k) != len(p)+8 {
			return false, corruptf("link key %q", k)
		}
		n, err := decodeRef(v)
		if err != nil {
			return false, err
		}
		dirs[Ino(be64(k[len(p):]))] = n
		return true, nil
	})
	return dirs, err
}

// addLinkCount adds delta to ino's count of links in dir, deleting the
// record at 0.
func (t txn) addLinkCount(ino, dir Ino, delta int64) error {
	k := linksKey(ino, dir)
	var n uint64
	v, ok, err := t.Get(k)
	if err != nil {
		return err
	}
	if ok {
		if n, err = decodeRef(v); err != nil {
			return err
		}
	}
	n += uint64(delta)
	if int64(n) <= 0 {
		return t.Delete(k)
	}
	return t.Put(k, encodeRef(n))
}

// linkAdded records a new link of the non-directory rec in dir; rec.Nlink
// is the count before it (the caller increments it).
func (t txn) linkAdded(rec *inodeRec, dir Ino) error {
	switch {
	case rec.Nlink == 0:
		rec.Parent = dir // an O_TMPFILE inode getting its name
		return nil
	case rec.Nlink == 1 && rec.Parent != 0:
		if err := t.addLinkCount(rec.Ino, rec.Parent, 1); err != nil {
			return err
		}
	}
	return t.addLinkCount(rec.Ino, dir, 1)
}

// linkDropped records that the non-directory rec lost its link in dir;
// rec.Nlink is the count after. An orphan keeps its last directory.
func (t txn) linkDropped(rec *inodeRec, dir Ino) error {
	if rec.Nlink == 0 {
		return nil
	}
	if err := t.addLinkCount(rec.Ino, dir, -1); err != nil {
		return err
	}
	dirs, err := t.linkDirs(rec.Ino)
	if err != nil {
		return err
	}
	if _, ok := dirs[rec.Parent]; !ok {
		rec.Parent = 0
		for d := range dirs {
			rec.Parent = d
			break
		}
	}
	if rec.Nlink == 1 {
		return t.deletePrefix(linksPrefix(rec.Ino))
	}
	return nil
}

// linkMoved records that a link of the non-directory rec moved from
// directory from to directory to (a rename).
func (t txn) linkMoved(rec *inodeRec, from, to Ino) error {
	rec.Parent = to
	if rec.Nlink < 2 {
		return nil
	}
	if err := t.addLinkCount(rec.Ino, from, -1); err != nil {
		return err
	}
	return t.addLinkCount(rec.Ino, to, 1)
}

// Orphans by directory. An orphan keeps the parent pointer of its last
// link (a removed directory kept open, its parent's), and an "q" dir ino
// record under that directory, so that when the directory itself is
// deleted its orphans' pointers move up to its parent (reparentOrphans)
// and Within still finds which subtree they were in: a file unlinked and
// its directory removed while a confined client has it open stays its.

// orphanDirKey is "q" dir ino.
func orphanDirKey(dir, ino Ino) []byte {
	return binary.BigEndian.AppendUint64(inoKey(pfxOrphanDir, dir), uint64(ino))
}

// putOrphan marks rec an orphan at now (linkable: an O_TMPFILE inode) and
// files it under its parent pointer's directory.
func (t txn) putOrphan(rec *inodeRec, now int64, linkable bool) error {
	if err := t.Put(orphanKey(rec.Ino), encodeOrphan(now, linkable)); err != nil {
		return err
	}
	if rec.Parent == 0 {
		return nil
	}
	return t.Put(orphanDirKey(rec.Parent, rec.Ino), []byte{recordV1})
}

// unorphan drops rec's orphan marker and its record under its directory.
func (t txn) unorphan(rec *inodeRec) error {
	if err := t.Delete(orphanKey(rec.Ino)); err != nil {
		return err
	}
	if rec.Parent == 0 {
		return nil
	}
	return t.Delete(orphanDirKey(rec.Parent, rec.Ino))
}

// reparentOrphans moves the orphans filed under directory dir, which is
// being deleted, to dir's parent.
func (t txn) reparentOrphans(dir, parent Ino) error {
	p := inoKey(pfxOrphanDir, dir)
	var inos []Ino
	err := t.Scan(p, kv.PrefixEnd(p), func(k, _ []byte) (bool, error) {
		if len(k) != len(p)+8 {
			return false, corruptf("orphan directory key %q", k)
		}
		inos = append(inos, Ino(be64(k[len(p):])))
		return true, nil
	})
	if err != nil {
		return err
	}
	for _, ino := range inos {
		if err := t.Delete(orphanDirKey(dir, ino)); err != nil {
			return err
		}
		rec, err := t.getInode(ino)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		rec.Parent = parent
		if err := t.putInode(rec); err != nil {
			return err
		}
		if err := t.Put(orphanDirKey(parent, ino), []byte{recordV1}); err != nil {
			return err
		}
	}
	return nil
}
