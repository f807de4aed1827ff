package meta

import (
	"context"
	"errors"
	"fmt"
	"syscall"

	"tessera/internal/kv"
)

// Subtrees. A caller confined to a subtree (package meta/authz) may use an
// inode only when it lies under the subtree's directory, which the parent
// pointers of inode records tell without a scan. A directory's pointer is
// its containing directory (the root's is itself). A non-directory's names
// a directory holding a link to it: the one it was made in (an O_TMPFILE
// inode's too) and follows through renames; an orphan keeps the directory
// of its last link, so a file unlinked while open stays in its subtree
// (also when that directory goes: links.go, reparentOrphans). A
// hard-linked file also has link records naming every directory holding
// one of its links (links.go), which Within consults when the pointer's
// chain misses the directory. So an inode is within a directory exactly
// when one of its names is.

// Within reports whether inode ino is directory dir or lies under it,
// walking up the parent pointers (and a hard-linked file's link records) in
// one read. An absent ino is ErrNotFound. An orphan left by a store older
// than key-schema version 3 has no pointer: it is within the root only.
func (s *Service) Within(ctx context.Context, ino, dir Ino) (bool, error) {
	var in bool
	err := s.view(ctx, func(t txn) error {
		var err error
		in, err = t.within(ino, dir)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("is inode %d under %d: %w", ino, dir, err)
	}
	return in, nil
}

func (t txn) within(ino, dir Ino) (bool, error) {
	rec, err := t.getInode(ino)
	if err != nil || dir == RootIno || ino == dir {
		return err == nil, err
	}
	if in, err := t.dirWithin(rec.Parent, dir); in || err != nil {
		return in, err
	}
	if rec.IsDir() || rec.Nlink < 2 {
		return false, nil
	}
	dirs, err := t.linkDirs(ino)
	if err != nil {
		return false, err
	}
	for d := range dirs {
		if d == rec.Parent {
			continue
		}
		if in, err := t.dirWithin(d, dir); in || err != nil {
			return in, err
		}
	}
	return false, nil
}

// dirWithin reports whether directory d is dir or lies under it.
func (t txn) dirWithin(d, dir Ino) (bool, error) {
	for range maxDepth {
		if d == dir {
			return true, nil
		}
		if d == RootIno || d == 0 {
			return false, nil
		}
		rec, err := t.getInode(d)
		if errors.Is(err, ErrNotFound) {
			return false, nil // a broken chain proves nothing
		}
		if err != nil {
			return false, err
		}
		d = rec.Parent
	}
	return false, corruptf("directory %d: parent chain longer than %d", d, maxDepth)
}

// addFileParents gives every linked non-directory of a store of format 2 or
// older, which kept no parent pointer for them, the directory of one of its
// entries, the hard-linked ones their link records, and files the orphans
// under their directories (links.go), in one transaction.
func (t txn) addFileParents() error {
	p := []byte{pfxDentry}
	links := map[Ino]map[Ino]uint64{} // ino -> dir -> links
	err := t.Scan(p, kv.PrefixEnd(p), func(k, v []byte) (bool, error) {
		dir, _, err := parseDentryKey(k)
		if err != nil {
			return false, err
		}
		ino, typ, err := decodeDentry(v)
		if err != nil {
			return false, err
		}
		if typ != syscall.S_IFDIR {
			if links[ino] == nil {
				links[ino] = map[Ino]uint64{}
			}
			links[ino][dir]++
		}
		return true, nil
	})
	if err != nil {
		return err
	}
	for ino, dirs := range links {
		rec, err := t.getInode(ino)
		if err != nil {
			return err
		}
		var total uint64
		for d, n := range dirs {
			rec.Parent = d
			total += n
		}
		if err := t.putInode(rec); err != nil {
			return err
		}
		if total < 2 {
			continue
		}
		for d, n := range dirs {
			if err := t.Put(linksKey(ino, d), encodeRef(n)); err != nil {
				return err
			}
		}
	}
	// Orphans filed under their directories: removed directories kept
	// open had their pointers already.
	p = []byte{pfxOrphan}
	var orphans []Ino
	err = t.Scan(p, kv.PrefixEnd(p), func(k, _ []byte) (bool, error) {
		ino, err := parseInoKey(pfxOrphan, k, "orphan")
		orphans = append(orphans, ino)
		return err == nil, err
	})
	if err != nil {
		return err
	}
	for _, ino := range orphans {
		rec, err := t.getInode(ino)
		if err != nil {
			return err
		}
		if rec.Parent != 0 {
			if err := t.Put(orphanDirKey(rec.Parent, ino), []byte{recordV1}); err != nil {
				return err
			}
		}
	}
	return nil
}
