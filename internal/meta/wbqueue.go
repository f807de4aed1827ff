package meta

import (
	"context"
	"fmt"
	"path"
	"syscall"

	"tessera/internal/auth"
	"tessera/internal/kv"
)

// The write-back hook (writebackHook). Every namespace or content change
// records its edit in its own kv transaction, after it made the change
// (pipeline.go), and the hook calls one of the wb* methods below on it;
// when the inode lies in a write-back fileset the method appends the
// operation to the fileset's queue in that same transaction, so an
// acknowledged change is never lost and never applied without its change
// (issue 14 item 5). In a read-only fileset it refuses the change. Outside
// filesets the cost is one scan of the empty "g" (fileset) range.

// ErrReadOnly is a change refused in a read-only fileset.
var ErrReadOnly = syscall.EROFS

// ErrNotSupported is a change a write-back fileset cannot carry home:
// hard links and exchanging renames, renames in or out of the fileset.
var ErrNotSupported = syscall.ENOTSUP

type noWritebackKey struct{}

// WithoutWriteback marks ctx so that changes made with it are not queued
// for write-back and are allowed in read-only filesets: the gateway's
// ingest of home's content into the cache uses it.
func WithoutWriteback(ctx context.Context) context.Context {
	return context.WithValue(ctx, noWritebackKey{}, true)
}

// skipWriteback: the gateway's own changes (ingest and revalidation, by
// ctx in process, over the wire by a caller whose role may cache home:
// gateway, admin) are home's content, not local updates.
func skipWriteback(ctx context.Context) bool {
	if v, _ := ctx.Value(noWritebackKey{}).(bool); v {
		return true
	}
	id, ok := auth.FromContext(ctx)
	return ok && id.Role.Can(auth.CacheHome)
}

// writebackHook queues each local change made in a write-back fileset,
// refuses those a read-only fileset or write-back cannot take, and checks
// a RemoveVanished's removal (fileset_vanish.go).
func (s *Service) writebackHook() hook {
	return hook{name: "writeback", inTxn: func(ctx context.Context, t txn, e *edit) error {
		switch e.kind {
		case editCreate:
			if e.name == "" {
				return nil // nameless (O_TMPFILE): Link names it
			}
			return s.wbCreated(ctx, t, e.dir, e.name, e.rec)
		case editLink:
			return s.wbLinked(ctx, t, e.dir, e.name)
		case editRemove:
			return s.wbRemoved(ctx, t, e.dir, e.name, e.ino, e.isDir)
		case editRename:
			return s.wbRenamed(ctx, t, e.dir, e.name, e.to, e.toName, e.ino, e.replaced, e.exchange)
		case editAttr:
			return s.wbSetAttr(ctx, t, e.rec, e.valid)
		case editContent:
			return s.wbChanged(ctx, t, e.rec, true)
		case editXattr:
			return s.wbCheck(ctx, t, e.rec)
		}
		return nil
	}}
}

// wbFilesets reads the filesets ("g" records); nil when there are none
// (no scan without their flag, hookflags.go). A change's transaction reads
// them once (the change set keeps them).
func (t txn) wbFilesets() (map[Ino]Fileset, error) {
	_, cs := t.changes()
	if cs != nil && cs.filesetsRead {
		return cs.filesets, nil
	}
	var sets map[Ino]Fileset
	flagged, err := t.hookFlagged(keyFilesetsFlag)
	if err == nil && flagged {
		sets, err = t.readFilesets()
	}
	if cs != nil && err == nil {
		cs.filesets, cs.filesetsRead = sets, true
	}
	return sets, err
}

func (t txn) readFilesets() (map[Ino]Fileset, error) {
	var sets map[Ino]Fileset
	p := []byte{pfxFileset}
	err := t.Scan(p, kv.PrefixEnd(p), func(k, v []byte) (bool, error) {
		root, err := parseFilesetKey(k)
		if err != nil {
			return false, err
		}
		f, err := decodeFileset(root, v)
		if err != nil {
			return false, err
		}
		if sets == nil {
			sets = map[Ino]Fileset{}
		}
		sets[root] = f
		return true, nil
	})
	return sets, err
}

// wbFilesetOf finds the fileset directory dir lies in (dir included),
// walking up the parent pointers.
func (t txn) wbFilesetOf(sets map[Ino]Fileset, dir Ino) (Fileset, bool, error) {
	for range maxDepth {
		if f, ok := sets[dir]; ok {
			return f, true, nil
		}
		if dir == RootIno || dir == 0 {
			return Fileset{}, false, nil
		}
		rec, err := t.getInode(dir)
		if err != nil {
			return Fileset{}, false, err
		}
		dir = rec.Parent
	}
	return Fileset{}, false, corruptf("directory %d: parent chain longer than %d", dir, maxDepth)
}

// wbPath is the path of directory dir relative to the fileset root. Names
// come from the "w" "a" records the hook keeps; a directory made before
// the fileset was (or by ingest) is looked up once in its parent and
// recorded.
func (t txn) wbPath(root, dir Ino) (string, error) {
	var parts []string
	for range maxDepth {
		if dir == root {
			for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
				parts[i], parts[j] = parts[j], parts[i]
			}
			return path.Join(parts...), nil
		}
		parent, name, err := t.wbName(dir)
		if err != nil {
			return "", err
		}
		parts = append(parts, name)
		dir = parent
	}
	return "", corruptf("directory %d: path longer than %d", dir, maxDepth)
}

func (t txn) wbName(ino Ino) (Ino, string, error) {
	v, ok, err := t.Get(wbKey(wbName, ino))
	if err != nil {
		return 0, "", err
	}
	if ok {
		return decodeWBName(v)
	}
	rec, err := t.getInode(ino)
	if err != nil {
		return 0, "", err
	}
	var name string
	p := dentryPrefix(rec.Parent)
	err = t.Scan(p, kv.PrefixEnd(p), func(k, v []byte) (bool, error) {
		child, _, err := decodeDentry(v)
		if err != nil || child != ino {
			return err == nil, err
		}
		name = string(k[len(p):])
		return false, nil
	})
	if err != nil {
		return 0, "", err
	}
	if name == "" {
		return 0, "", fmt.Errorf("name of inode %d in %d: %w", ino, rec.Parent, ErrNotFound)
	}
	return rec.Parent, name, t.Put(wbKey(wbName, ino), encodeWBName(rec.Parent, name))
}

// wbWhere returns the fileset dir lies in and the path of dir/name in it;
// ok is false outside write-back filesets (or when ctx skips write-back).
func (s *Service) wbWhere(ctx context.Context, t txn, dir Ino, name string) (f Fileset, p string, ok bool, err error) {
	if skipWriteback(ctx) {
		return Fileset{}, "", false, nil
	}
	sets, err := t.wbFilesets()
	if err != nil || sets == nil {
		return Fileset{}, "", false, err
	}
	if f, ok, err = t.wbFilesetOf(sets, dir); err != nil || !ok {
		return Fileset{}, "", false, err
	}
	switch f.Mode {
	case ModeRO:
		return f, "", true, ErrReadOnly
	case ModeLU:
		// Local updates stay local: nothing goes home.
		return Fileset{}, "", false, nil
	}
	if p, err = t.wbPath(f.Root, dir); err != nil {
		return f, "", true, err
	}
	if name != "" {
		p = path.Join(p, name)
	}
	return f, p, true, nil
}

// wbCreated queues the making of dir/name (rec, just stored).
func (s *Service) wbCreated(ctx context.Context, t txn, dir Ino, name string, rec *inodeRec) error {
	f, p, ok, err := s.wbWhere(ctx, t, dir, name)
	if err != nil || !ok {
		return err
	}
	if err := t.Put(wbKey(wbName, rec.Ino), encodeWBName(dir, name)); err != nil {
		return err
	}
	op := &WBOp{Ino: rec.Ino, Path: p, Mode: rec.Mode & 07777}
	switch typeOf(rec.Mode) {
	case syscall.S_IFREG:
		op.Kind, op.New = OpPut, true
	case syscall.S_IFDIR:
		op.Kind = OpMkdir
	case syscall.S_IFLNK:
		op.Kind, op.Target = OpSymlink, rec.Target
	default:
		return fmt.Errorf("device or fifo in write-back fileset: %w", ErrNotSupported)
	}
	return s.wbAppend(t, f, op)
}

// wbChanged queues a change of the content (content) or attributes of rec.
func (s *Service) wbChanged(ctx context.Context, t txn, rec *inodeRec, content bool) error {
	if rec.Nlink == 0 && !rec.IsDir() {
		// An orphan's content no longer has a name at home; still, a
		// read-only fileset refuses it.
		_, _, _, err := s.wbWhere(ctx, t, rec.Parent, "")
		return err
	}
	dir, name := rec.Ino, ""
	if !rec.IsDir() {
		parent, n, err := t.wbNameIfIn(ctx, s, rec)
		if err != nil || parent == 0 {
			return err
		}
		dir, name = parent, n
	}
	f, p, ok, err := s.wbWhere(ctx, t, dir, name)
	if err != nil || !ok {
		return err
	}
	op := &WBOp{Ino: rec.Ino, Path: p, Mode: rec.Mode & 07777, Mtime: rec.Mtime, Kind: OpSetattr}
	if content && rec.IsRegular() {
		op.Kind = OpPut
	}
	return s.wbAppend(t, f, op)
}

// wbNameIfIn returns the parent and name of the non-directory rec when
// a write-back fileset exists (parent 0 otherwise).
func (t txn) wbNameIfIn(ctx context.Context, s *Service, rec *inodeRec) (Ino, string, error) {
	if skipWriteback(ctx) {
		return 0, "", nil
	}
	sets, err := t.wbFilesets()
	if err != nil || sets == nil {
		return 0, "", err
	}
	if _, ok, err := t.wbFilesetOf(sets, rec.Parent); err != nil || !ok {
		return 0, "", err
	}
	return t.wbName(rec.Ino)
}

// wbRemoved queues the removal of dir/name, which named rec (a directory
// when isDir); last says the inode lost its last name.
func (s *Service) wbRemoved(ctx context.Context, t txn, dir Ino, name string, ino Ino, isDir bool) error {
	if err := t.vanishGuard(ctx, ino); err != nil { // fileset_vanish.go
		return err
	}
	f, p, ok, err := s.wbWhere(ctx, t, dir, name)
	if err != nil || !ok {
		return err
	}
	if err := t.Delete(wbKey(wbName, ino)); err != nil {
		return err
	}
	op := &WBOp{Ino: ino, Path: p, Kind: OpRemove}
	if isDir {
		op.Kind = OpRmdir
	}
	return s.wbAppend(t, f, op)
}

// wbLinked refuses a hard link inside a write-back fileset: homes have
// none to carry it.
func (s *Service) wbLinked(ctx context.Context, t txn, dir Ino, name string) error {
	_, _, ok, err := s.wbWhere(ctx, t, dir, name)
	if err == nil && ok {
		err = fmt.Errorf("hard link in a write-back fileset: %w", ErrNotSupported)
	}
	return err
}

// wbRenamed queues the move of src (a directory when isDir) from
// oldDir/oldName to newDir/newName; replaced is the inode the move
// overwrote (0 if none). Exchanges, and moves in or out of a fileset,
// are refused.
func (s *Service) wbRenamed(ctx context.Context, t txn, oldDir Ino, oldName string, newDir Ino, newName string, src, replaced Ino, exchange bool) error {
	f1, p1, ok1, err := s.wbWhere(ctx, t, oldDir, oldName)
	if err != nil {
		return err
	}
	f2, p2, ok2, err := s.wbWhere(ctx, t, newDir, newName)
	if err != nil {
		return err
	}
	switch {
	case !ok1 && !ok2:
		return nil
	case ok1 != ok2 || f1.Root != f2.Root:
		return fmt.Errorf("rename across a write-back fileset's border: %w", syscall.EXDEV)
	case exchange:
		return fmt.Errorf("exchanging rename in a write-back fileset: %w", ErrNotSupported)
	}
	if err := t.Put(wbKey(wbName, src), encodeWBName(newDir, newName)); err != nil {
		return err
	}
	if replaced != 0 {
		if err := t.Delete(wbKey(wbName, replaced)); err != nil {
			return err
		}
	}
	return s.wbAppend(t, f1, &WBOp{Ino: src, Path: p1, Path2: p2, Kind: OpRename})
}

// wbCheck refuses any change in a read-only fileset (xattrs, which no home
// carries, are otherwise kept in the cache only).
func (s *Service) wbCheck(ctx context.Context, t txn, rec *inodeRec) error {
	dir := rec.Parent
	if rec.IsDir() {
		dir = rec.Ino
	}
	_, _, _, err := s.wbWhere(ctx, t, dir, "")
	return err
}

// wbSetAttr queues a SetAttr; one that sets only the access time (a read)
// changes nothing home keeps, and is allowed in a read-only fileset.
func (s *Service) wbSetAttr(ctx context.Context, t txn, rec *inodeRec, valid uint32) error {
	if valid&^(SetAtime|SetCtime) == 0 {
		return nil
	}
	return s.wbChanged(ctx, t, rec, valid&SetSize != 0)
}
