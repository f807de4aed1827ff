package meta

import (
	"fmt"
	"strings"
	"syscall"

	"tessera/internal/kv"
)

// txn wraps a kv.Txn with typed accessors for the records of the key schema.
type txn struct{ kv.Txn }

// getInode loads an inode; an absent one is ErrNotFound.
func (t txn) getInode(ino Ino) (*inodeRec, error) {
	v, ok, err := t.Get(inodeKey(ino))
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("inode %d: %w", ino, ErrNotFound)
	}
	return decodeInode(ino, v)
}

// getDir loads an inode that must be a directory, and a linked one: a
// removed directory kept while open (Nlink 0) takes no entries.
func (t txn) getDir(ino Ino) (*inodeRec, error) {
	rec, err := t.getInode(ino)
	if err != nil {
		return nil, err
	}
	if !rec.IsDir() {
		return nil, fmt.Errorf("inode %d: %w", ino, ErrNotDir)
	}
	if rec.Nlink == 0 {
		return nil, fmt.Errorf("directory %d was removed: %w", ino, ErrNotFound)
	}
	return rec, nil
}

// fillInodes loads the inode of every entry, in one read of the store
// when it can read several keys at once (kv.GetMany; etcd: one round trip
// for a page of a listing, not one per entry).
func (t txn) fillInodes(ents []DirEntry) error {
	keys := make([][]byte, len(ents))
	for i := range ents {
		keys[i] = inodeKey(ents[i].Ino)
	}
	vals, oks, err := kv.GetMany(t.Txn, keys)
	if err != nil {
		return err
	}
	for i := range ents {
		if !oks[i] {
			return fmt.Errorf("inode %d: %w", ents[i].Ino, ErrNotFound)
		}
		rec, err := decodeInode(ents[i].Ino, vals[i])
		if err != nil {
			return err
		}
		ents[i].Inode = &rec.Inode
		ents[i].Mode = rec.Mode
	}
	return nil
}

func (t txn) putInode(rec *inodeRec) error {
	return t.Put(inodeKey(rec.Ino), encodeInode(rec))
}

// getDirEntry is getDir(parent) and getDentry(parent, name) in one read
// of the store (kv.GetMany: one round trip on etcd, not two).
func (t txn) getDirEntry(parent Ino, name string) (dir *inodeRec, ino Ino, typ uint32, ok bool, err error) {
	if !t.multiGets() {
		if dir, err = t.getDir(parent); err != nil {
			return nil, 0, 0, false, err
		}
		ino, typ, ok, err = t.getDentry(parent, name)
		return dir, ino, typ, ok, err
	}
	vals, oks, err := kv.GetMany(t.Txn, [][]byte{inodeKey(parent), dentryKey(parent, name)})
	if err != nil {
		return nil, 0, 0, false, err
	}
	if !oks[0] {
		return nil, 0, 0, false, fmt.Errorf("inode %d: %w", parent, ErrNotFound)
	}
	if dir, err = decodeInode(parent, vals[0]); err != nil {
		return nil, 0, 0, false, err
	}
	if !dir.IsDir() {
		return nil, 0, 0, false, fmt.Errorf("inode %d: %w", parent, ErrNotDir)
	}
	if dir.Nlink == 0 {
		return nil, 0, 0, false, fmt.Errorf("directory %d was removed: %w", parent, ErrNotFound)
	}
	if !oks[1] {
		return dir, 0, 0, false, nil
	}
	ino, typ, err = decodeDentry(vals[1])
	return dir, ino, typ, err == nil, err
}

// hookRanges are the key ranges the hooks of every change scan when their
// flags are set (hookflags.go): the filesets (write-back). The quota hook
// reads one key, keyQuotas (quota_cache.go).
func hookRanges() []kv.Range {
	fs := []byte{pfxFileset}
	return []kv.Range{{Start: fs, End: kv.PrefixEnd(fs)}}
}

// prefetchEntry reads, in one call where the store can (kv.Prefetch), the
// directory parent, its entry name and the ranges of hookRanges: what a
// change of the entry reads before it knows the inode.
func (t txn) prefetchEntry(parent Ino, name string) error {
	if !t.prefetches() {
		return nil
	}
	return kv.Prefetch(t.Txn, append([][]byte{inodeKey(parent), dentryKey(parent, name)}, hookFlagKeys()...), hookRanges())
}

// prefetchRemoval reads, in one call where the store can, what removing a
// link of ino (and maybe deleting it) reads of it: the inode, its pending
// drop, its usage counter shard, and the ranges of its open and lease
// records, recipe and xattrs (a range too large for one read is left to
// the Scan).
func (t txn) prefetchRemoval(ino Ino) error {
	if !t.prefetches() {
		return nil
	}
	var ranges []kv.Range
	for _, p := range [][]byte{inoKey(pfxOpen, ino), segmentPrefix(ino), xattrPrefix(ino), inoKey(pfxLease, ino)} {
		ranges = append(ranges, kv.Range{Start: p, End: kv.PrefixEnd(p)})
	}
	return kv.Prefetch(t.Txn, [][]byte{inodeKey(ino), pendingKey(ino), counterKey(ctrFiles, ino)}, ranges)
}

// prefetchCreate reads what a create of ino reads, in one call where the
// store can (kv.Prefetch; etcd: one round trip, not four): the parent, the
// name, the usage counter's shard, and the ranges of the hooks' records
// every change reads (the fileset flag and range, the quota set's version).
func (t txn) prefetchCreate(req CreateReq, ino Ino) error {
	if !t.prefetches() {
		return nil
	}
	keys := [][]byte{inodeKey(req.Parent), counterKey(ctrFiles, ino)}
	if !req.Tmpfile {
		keys = append(keys, dentryKey(req.Parent, req.Name))
	}
	return kv.Prefetch(t.Txn, append(keys, hookFlagKeys()...), hookRanges())
}

// lookup returns the inode parent/name names: the directory, the entry
// and, when hints has one, the inode the entry last named, in one
// kv.GetMany; the inode again only when the hint was wrong. It records
// what it found in hints. On a store that reads key by key it reads the
// directory, the entry and the inode in turn, and keeps no hint.
func (t txn) lookup(hints *nameHints, parent Ino, name string) (*inodeRec, error) {
	if hints == nil || !t.multiGets() {
		// One Get per key: a hint would save no call, so none is kept.
		_, ino, _, ok, err := t.getDirEntry(parent, name)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, ErrNotFound
		}
		return t.getInode(ino)
	}
	keys := [][]byte{inodeKey(parent), dentryKey(parent, name)}
	hint, hinted := hints.get(parent, name)
	if hinted {
		keys = append(keys, inodeKey(hint))
	}
	vals, oks, err := kv.GetMany(t.Txn, keys)
	if err != nil {
		return nil, err
	}
	if !oks[0] {
		return nil, fmt.Errorf("inode %d: %w", parent, ErrNotFound)
	}
	dir, err := decodeInode(parent, vals[0])
	if err != nil {
		return nil, err
	}
	if !dir.IsDir() {
		return nil, fmt.Errorf("inode %d: %w", parent, ErrNotDir)
	}
	if dir.Nlink == 0 {
		return nil, fmt.Errorf("directory %d was removed: %w", parent, ErrNotFound)
	}
	if !oks[1] {
		return nil, ErrNotFound
	}
	ino, _, err := decodeDentry(vals[1])
	if err != nil {
		return nil, err
	}
	if hinted && ino == hint && oks[2] {
		return decodeInode(ino, vals[2])
	}
	hints.put(parent, name, ino)
	return t.getInode(ino)
}

// getDentry looks name up in parent; ok is false when it is absent.
func (t txn) getDentry(parent Ino, name string) (ino Ino, typ uint32, ok bool, err error) {
	v, ok, err := t.Get(dentryKey(parent, name))
	if err != nil || !ok {
		return 0, 0, false, err
	}
	ino, typ, err = decodeDentry(v)
	return ino, typ, err == nil, err
}

func (t txn) putDentry(parent Ino, name string, ino Ino, mode uint32) error {
	return t.Put(dentryKey(parent, name), encodeDentry(ino, mode))
}

// dirEmpty reports whether directory ino has no entries.
func (t txn) dirEmpty(ino Ino) (bool, error) {
	p := dentryPrefix(ino)
	empty := true
	err := t.Scan(p, kv.PrefixEnd(p), func(_, _ []byte) (bool, error) {
		empty = false
		return false, nil
	})
	return empty, err
}

// addCounter adds delta (two's complement for negative) to the shard of a
// usage counter that ino belongs to.
func (t txn) addCounter(kind byte, ino Ino, delta int64) error {
	if delta == 0 {
		return nil
	}
	k := counterKey(kind, ino)
	var cur uint64
	v, ok, err := t.Get(k)
	if err != nil {
		return err
	}
	if ok {
		if cur, err = decodeU64(v); err != nil {
			return err
		}
	}
	return t.Put(k, encodeU64(cur+uint64(delta)))
}

// deletePrefix deletes every key starting with p.
func (t txn) deletePrefix(p []byte) error {
	var keys [][]byte
	err := t.Scan(p, kv.PrefixEnd(p), func(k, _ []byte) (bool, error) {
		keys = append(keys, append([]byte(nil), k...))
		return true, nil
	})
	if err != nil {
		return err
	}
	for _, k := range keys {
		if err := t.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// touch records a change of rec at now: ctime and the change counter.
func (rec *inodeRec) touch(now int64) {
	rec.Ctime = now
	rec.Change++
}

// touchDir records an entry change in a directory: mtime too.
func (rec *inodeRec) touchDir(now int64) {
	rec.Mtime = now
	rec.touch(now)
}

// checkName validates a directory entry name.
func checkName(name string) error {
	switch {
	case name == "" || name == "." || name == "..":
		return ErrInvalid
	case len(name) > MaxNameLen:
		return ErrNameTooLong
	case strings.ContainsAny(name, "/\x00"):
		return ErrInvalid
	}
	return nil
}

// typeOf returns the S_IFMT bits of mode.
func typeOf(mode uint32) uint32 { return mode & syscall.S_IFMT }
