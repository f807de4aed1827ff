package meta

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"tessera/internal/kv"
)

// checkXattrName validates an xattr name as Linux does.
func checkXattrName(name string) error {
	switch {
	case name == "" || strings.IndexByte(name, 0) >= 0:
		return ErrInvalid
	case len(name) > XattrNameMax:
		return ErrRange
	}
	return nil
}

// GetXattr returns the value of xattr name of ino; ErrNoAttr if absent.
func (s *Service) GetXattr(ctx context.Context, ino Ino, name string) ([]byte, error) {
	var out []byte
	err := checkXattrName(name)
	if err == nil {
		err = s.view(ctx, func(t txn) error {
			if _, field := fieldAttrs[name]; !field {
				// The inode and the attribute in one read (kv.GetMany:
				// one round trip on etcd; ls -l asks for one per file).
				vals, oks, err := kv.GetMany(t.Txn, [][]byte{inodeKey(ino), xattrKey(ino, name)})
				if err != nil {
					return err
				}
				if !oks[0] {
					return fmt.Errorf("inode %d: %w", ino, ErrNotFound)
				}
				if _, err := decodeInode(ino, vals[0]); err != nil {
					return err
				}
				if !oks[1] {
					return ErrNoAttr
				}
				out, err = decodeXattr(vals[1])
				return err
			}
			rec, err := t.getInode(ino)
			if err != nil {
				return err
			}
			if fa, ok := fieldAttrs[name]; ok {
				v, present := fa.get(rec)
				if !present {
					return ErrNoAttr
				}
				out = []byte(v)
				return nil
			}
			v, ok, err := t.Get(xattrKey(ino, name))
			if err != nil {
				return err
			}
			if !ok {
				return ErrNoAttr
			}
			out, err = decodeXattr(v)
			return err
		})
	}
	if err != nil {
		return nil, fmt.Errorf("getxattr %d %s: %w", ino, Quote(name), err)
	}
	return out, nil
}

// SetXattr sets xattr name of ino; flags XattrCreate (fail with ErrExist if
// present) or XattrReplace (fail with ErrNoAttr if absent).
func (s *Service) SetXattr(ctx context.Context, ino Ino, name string, value []byte, flags uint32) error {
	err := checkXattrName(name)
	switch {
	case err != nil:
	case flags&^(XattrCreate|XattrReplace) != 0 || flags == XattrCreate|XattrReplace:
		err = ErrInvalid
	case len(value) > XattrValueMax:
		err = ErrTooBig
	}
	if err == nil {
		err = s.update(ctx, func(t txn) error {
			rec, err := t.getInode(ino)
			if err != nil {
				return err
			}
			// Recorded before anything else is looked at: a read-only
			// fileset refuses first (as a read-only mount: EROFS, not
			// ENODATA).
			if err := t.record(edit{kind: editXattr, ino: ino, rec: rec, tell: &notice{change: change{ino: ino}}}); err != nil {
				return err
			}
			if fa, ok := fieldAttrs[name]; ok {
				if err := setFieldAttr(fa, rec, value, flags); err != nil {
					return err
				}
				rec.touch(s.nowNs())
				return t.putInode(rec)
			}
			k := xattrKey(ino, name)
			_, ok, err := t.Get(k)
			switch {
			case err != nil:
				return err
			case ok && flags&XattrCreate != 0:
				return ErrExist
			case !ok && flags&XattrReplace != 0:
				return ErrNoAttr
			}
			if err := t.Put(k, encodeXattr(value)); err != nil {
				return err
			}
			rec.touch(s.nowNs())
			return t.putInode(rec)
		})
	}
	if err != nil {
		return fmt.Errorf("setxattr %d %s: %w", ino, Quote(name), err)
	}
	return nil
}

// ListXattr returns the xattr names of ino in name order.
func (s *Service) ListXattr(ctx context.Context, ino Ino) ([]string, error) {
	var names []string
	err := s.view(ctx, func(t txn) error {
		names = names[:0]
		rec, err := t.getInode(ino)
		if err != nil {
			return err
		}
		for name, fa := range fieldAttrs {
			if _, present := fa.get(rec); present && !fa.unlisted {
				names = append(names, name)
			}
		}
		p := xattrPrefix(ino)
		return t.Scan(p, kv.PrefixEnd(p), func(k, _ []byte) (bool, error) {
			_, name, err := parseXattrKey(k)
			names = append(names, name)
			return err == nil, err
		})
	})
	sort.Strings(names)
	if err != nil {
		return nil, fmt.Errorf("listxattr %d: %w", ino, err)
	}
	return names, nil
}

// RemoveXattr removes xattr name of ino; ErrNoAttr if absent.
func (s *Service) RemoveXattr(ctx context.Context, ino Ino, name string) error {
	err := checkXattrName(name)
	if err == nil {
		err = s.update(ctx, func(t txn) error {
			rec, err := t.getInode(ino)
			if err != nil {
				return err
			}
			// Recorded before anything else is looked at: a read-only
			// fileset refuses first (as a read-only mount: EROFS, not
			// ENODATA).
			if err := t.record(edit{kind: editXattr, ino: ino, rec: rec, tell: &notice{change: change{ino: ino}}}); err != nil {
				return err
			}
			if fa, ok := fieldAttrs[name]; ok {
				if _, present := fa.get(rec); !present {
					return ErrNoAttr
				}
				if fa.clear == nil {
					return fmt.Errorf("%s can be set, not removed: %w", Quote(name), ErrInvalid)
				}
				fa.clear(rec)
				rec.touch(s.nowNs())
				return t.putInode(rec)
			}
			k := xattrKey(ino, name)
			if _, ok, err := t.Get(k); err != nil {
				return err
			} else if !ok {
				return ErrNoAttr
			}
			if err := t.Delete(k); err != nil {
				return err
			}
			rec.touch(s.nowNs())
			return t.putInode(rec)
		})
	}
	if err != nil {
		return fmt.Errorf("removexattr %d %s: %w", ino, Quote(name), err)
	}
	return nil
}
