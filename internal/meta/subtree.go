package meta

import (
	"context"
	"fmt"
	"syscall"

	"tessera/internal/kv"
)

// Subtrees. A caller confined to a subtree (package meta/authz) may use an
// inode only when it lies under the subtree's directory, which the parent
// pointers of inode records tell without a scan. A directory's pointer is
// its containing directory (the root's is itself). A non-directory's names
// the directory it was made in (an O_TMPFILE inode's too) and follows it
// through renames; so that it never names a directory holding no link to
// it, removing the link it names while other links remain clears it to 0
// (unknown: the remaining links may all lie elsewhere), and Link gives an
// unknown one its new directory. An orphan keeps the directory of its last
// link. Within therefore never places an inode under a directory that does
// not hold it; it may miss a hard link whose pointer names another of its
// directories, or was cleared: a confined caller is then refused an inode
// it can see by name, never given one it cannot.

// Within reports whether inode ino is directory dir or lies under it,
// walking up the parent pointers in one read. An absent ino is ErrNotFound;
// a non-directory whose pointer is unknown (0) is not within any directory
// but the root.
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
	if dir == RootIno {
		_, err := t.getInode(ino)
		return err == nil, err
	}
	cur := ino
	for range maxDepth {
		if cur == dir {
			return true, nil
		}
		if cur == RootIno || cur == 0 {
			return false, nil
		}
		rec, err := t.getInode(cur)
		if err != nil {
			return false, err
		}
		cur = rec.Parent
	}
	return false, corruptf("inode %d: parent chain longer than %d", ino, maxDepth)
}

// addFileParents gives every linked non-directory of a store of format 2 or
// older, which kept no parent pointer for them, the directory of one of its
// entries, in one transaction.
func (t txn) addFileParents() error {
	p := []byte{pfxDentry}
	parents := map[Ino]Ino{}
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
			parents[ino] = dir
		}
		return true, nil
	})
	if err != nil {
		return err
	}
	for ino, dir := range parents {
		rec, err := t.getInode(ino)
		if err != nil {
			return err
		}
		if rec.Parent == 0 {
			rec.Parent = dir
			if err := t.putInode(rec); err != nil {
				return err
			}
		}
	}
	return nil
}
