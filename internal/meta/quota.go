package meta

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"syscall"

	"tessera/internal/kv"
)

// Directory quotas (issue 26 item 3; docs/design/2026-11-29-meta-pipeline.md).
//
// A quota directory has a record of its limits ("Q" dir) and one of its
// usage ("U" dir, apart: rewritten by every change under it, it would
// slow the scan of the limits in an LSM store's memtable): the inodes
// under it (not itself) and the bytes of the regular files
// among them, each inode once however many names it has, an orphan until
// it is deleted. The quota hook (quotaHook) keeps the usage of every quota
// directory above a change in the change's own transaction, so it never
// needs a walk: a new inode counts where its parent pointer leads, a
// deleted one stops counting there, a change of size counts by its delta.
// A change that would take a usage past its limit fails with ErrQuota
// (EDQUOT); one that lowers it never does. So that every name of an inode
// and the parent pointer agree on the quota directories above them, a
// rename of a directory, or of a file with several links, into another
// set of quota directories, and a hard link into another set, are refused
// with EXDEV (as Lustre's project quotas and CephFS's quota realms do):
// tools copy instead. Without quotas the hook costs one read of the quota
// set's version per change (quota_cache.go).

// ErrQuota is a change that would take a directory quota's usage past its
// limit.
var ErrQuota = syscall.EDQUOT

// pfxQuota and pfxUsage are the prefixes of quota records: "Q" dir (the
// limits) and "U" dir (the usage).
const (
	pfxQuota = 'Q'
	pfxUsage = 'U'
)

func quotaKey(dir Ino) []byte { return inoKey(pfxQuota, dir) }
func usageKey(dir Ino) []byte { return inoKey(pfxUsage, dir) }

// Quota is a directory quota: its limits (0: none) and its usage.
type Quota struct {
	Dir                 Ino
	MaxBytes, MaxInodes uint64
	Bytes, Inodes       uint64
}

// quotaState is a quota as a transaction knows it: the usage is read when
// first needed.
type quotaState struct {
	Quota
	loaded bool
}

// Records: 1 | a 8 | b 8: the limits (max bytes, max inodes) and the usage
// (bytes, inodes).
func encodePair(a, b uint64) []byte {
	return binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64([]byte{recordV1}, a), b)
}

func decodePair(what string, dir Ino, v []byte) (uint64, uint64, error) {
	if len(v) != 17 || v[0] != recordV1 {
		return 0, 0, corruptf("quota %s record of %d: %d bytes", what, dir, len(v))
	}
	return be64(v[1:]), be64(v[9:]), nil
}

// loadUsage reads q's usage unless it has.
func (t txn) loadUsage(q *quotaState) error {
	if q.loaded {
		return nil
	}
	v, ok, err := t.Get(usageKey(q.Dir))
	if err != nil {
		return err
	}
	if ok {
		if q.Bytes, q.Inodes, err = decodePair("usage", q.Dir, v); err != nil {
			return err
		}
	}
	q.loaded = true
	return nil
}

// getQuota returns the quota of dir with its usage (ok false: none).
func (t txn) getQuota(dir Ino) (*quotaState, bool, error) {
	v, ok, err := t.Get(quotaKey(dir))
	if err != nil || !ok {
		return nil, false, err
	}
	q := &quotaState{Quota: Quota{Dir: dir}}
	if q.MaxBytes, q.MaxInodes, err = decodePair("limits", dir, v); err != nil {
		return nil, false, err
	}
	return q, true, t.loadUsage(q)
}

// putQuota writes both records of q.
func (t txn) putQuota(q *quotaState) error {
	if err := t.bumpQuotas(); err != nil {
		return err
	}
	if err := t.Put(quotaKey(q.Dir), encodePair(q.MaxBytes, q.MaxInodes)); err != nil {
		return err
	}
	return t.Put(usageKey(q.Dir), encodePair(q.Bytes, q.Inodes))
}

// deleteQuota deletes both records of the quota of dir.
func (t txn) deleteQuota(dir Ino) error {
	if err := t.bumpQuotas(); err != nil {
		return err
	}
	if err := t.Delete(quotaKey(dir)); err != nil {
		return err
	}
	return t.Delete(usageKey(dir))
}

// readQuotas returns every quota by directory, usage not read; nil when
// none.
func (t txn) readQuotas() (map[Ino]*quotaState, error) {
	var qs map[Ino]*quotaState
	p := []byte{pfxQuota}
	err := t.Scan(p, kv.PrefixEnd(p), func(k, v []byte) (bool, error) {
		if len(k) != 9 {
			return false, corruptf("quota key %x", k)
		}
		dir := Ino(be64(k[1:]))
		q := &quotaState{Quota: Quota{Dir: dir}}
		var err error
		if q.MaxBytes, q.MaxInodes, err = decodePair("limits", dir, v); err != nil {
			return false, err
		}
		if qs == nil {
			qs = map[Ino]*quotaState{}
		}
		qs[dir] = q
		return true, nil
	})
	return qs, err
}

// quotasIn returns the quota records for the quota hook, read once per
// change set (no scan without their flag, hookflags.go).
func (t txn) quotasIn() (map[Ino]*quotaState, error) {
	_, cs := t.changes()
	if cs.quotasRead {
		return cs.quotas, nil
	}
	qs, ver, err := t.quotaSet()
	if err != nil {
		return nil, err
	}
	cs.quotas, cs.quotasRead, cs.quotaVersion = qs, true, ver
	return qs, nil
}

// quotaChain returns the quota directories an inode whose parent pointer
// is dir counts in: dir and its ancestors that have a quota (kept between
// changes: quota_cache.go).
func (t txn) quotaChain(qs map[Ino]*quotaState, dir Ino) ([]Ino, error) {
	s, cs := t.changes()
	if s == nil || cs.quotaVersion == 0 {
		chain, _, err := t.walkQuotaChain(qs, dir)
		return chain, err
	}
	if chain, ok := s.quotaCache.chain(cs.quotaVersion, dir); ok {
		return chain, nil
	}
	chain, whole, err := t.walkQuotaChain(qs, dir)
	if err == nil && whole {
		s.quotaCache.keepChain(cs.quotaVersion, dir, chain)
	}
	return chain, err
}

// walkQuotaChain is quotaChain by the parent pointers; whole is false
// when the walk met a directory deleted in this change.
func (t txn) walkQuotaChain(qs map[Ino]*quotaState, dir Ino) (chain []Ino, whole bool, err error) {
	var out []Ino
	for range maxDepth {
		if dir == 0 {
			return out, true, nil
		}
		if _, ok := qs[dir]; ok {
			out = append(out, dir)
		}
		if dir == RootIno {
			return out, true, nil
		}
		rec, err := t.getInode(dir)
		if errors.Is(err, ErrNotFound) {
			return out, false, nil // an orphan's directory deleted in this change
		}
		if err != nil {
			return nil, false, err
		}
		dir = rec.Parent
	}
	return nil, false, corruptf("directory %d: parent chain longer than %d", dir, maxDepth)
}

// charge adds inodes and bytes to the usage of the quota directories in
// chain, refusing with ErrQuota a growth past a limit.
func (t txn) charge(qs map[Ino]*quotaState, chain []Ino, inodes, bytes int64) error {
	for _, dir := range chain {
		q := qs[dir]
		if q == nil {
			continue // its quota went earlier in this change
		}
		if err := t.loadUsage(q); err != nil {
			return err
		}
		if inodes > 0 && q.MaxInodes > 0 && q.Inodes+uint64(inodes) > q.MaxInodes {
			return fmt.Errorf("directory %d holds %d inodes, its quota %d: %w", dir, q.Inodes, q.MaxInodes, ErrQuota)
		}
		if bytes > 0 && q.MaxBytes > 0 && q.Bytes+uint64(bytes) > q.MaxBytes {
			return fmt.Errorf("directory %d holds %d bytes, its quota %d, %d more: %w", dir, q.Bytes, q.MaxBytes, bytes, ErrQuota)
		}
		q.Inodes = addSat(q.Inodes, inodes)
		q.Bytes = addSat(q.Bytes, bytes)
		if err := t.Put(usageKey(dir), encodePair(q.Bytes, q.Inodes)); err != nil {
			return err
		}
	}
	return nil
}

// addSat adds d to v, at least 0.
func addSat(v uint64, d int64) uint64 {
	if d < 0 && uint64(-d) > v {
		return 0
	}
	return v + uint64(d)
}

// bytesOf is what an inode counts in a quota's bytes.
func bytesOf(rec *inodeRec) int64 {
	if rec.IsRegular() {
		return int64(rec.Size)
	}
	return 0
}

// quotaHook keeps the usage of quota directories (see above).
func quotaHook() hook {
	return hook{name: "quota", inTxn: func(_ context.Context, t txn, e *edit) error {
		qs, err := t.quotasIn()
		if err != nil || qs == nil {
			return err
		}
		switch e.kind {
		case editCreate, editIngest:
			return t.chargeAt(qs, e.rec.Parent, 1, bytesOf(e.rec))
		case editDelete:
			if q, ok := qs[e.ino]; ok && e.rec.IsDir() { // a quota directory removed
				delete(qs, q.Dir)
				if err := t.deleteQuota(q.Dir); err != nil {
					return err
				}
			}
			return t.chargeAt(qs, e.rec.Parent, -1, -bytesOf(e.rec))
		case editAttr, editContent:
			if e.sizeDelta == 0 {
				return nil
			}
			return t.chargeAt(qs, e.rec.Parent, 0, e.sizeDelta)
		case editLink:
			return t.sameQuotas(qs, e.dir, e.was, "hard link")
		case editRename:
			return t.moveQuotas(qs, e)
		}
		return nil
	}}
}

func (t txn) chargeAt(qs map[Ino]*quotaState, dir Ino, inodes, bytes int64) error {
	chain, err := t.quotaChain(qs, dir)
	if err != nil || len(chain) == 0 {
		return err
	}
	return t.charge(qs, chain, inodes, bytes)
}

// sameQuotas refuses with EXDEV a change that would give an inode names
// under different sets of quota directories.
func (t txn) sameQuotas(qs map[Ino]*quotaState, a, b Ino, what string) error {
	ca, err := t.quotaChain(qs, a)
	if err != nil {
		return err
	}
	cb, err := t.quotaChain(qs, b)
	if err != nil {
		return err
	}
	if !sameSet(ca, cb) {
		return fmt.Errorf("%s across a directory quota's border: %w", what, syscall.EXDEV)
	}
	return nil
}

// moveQuotas moves a renamed file's usage between quota directories.
func (t txn) moveQuotas(qs map[Ino]*quotaState, e *edit) error {
	from, err := t.quotaChain(qs, e.dir)
	if err != nil {
		return err
	}
	to, err := t.quotaChain(qs, e.to)
	if err != nil {
		return err
	}
	if sameSet(from, to) {
		return nil
	}
	if e.isDir || e.exchange || e.rec.Nlink > 1 {
		return fmt.Errorf("rename of a directory, a hard-linked file or an exchange across a directory quota's border: %w", syscall.EXDEV)
	}
	b := bytesOf(e.rec)
	if err := t.charge(qs, minus(to, from), 1, b); err != nil {
		return err
	}
	return t.charge(qs, minus(from, to), -1, -b)
}

func sameSet(a, b []Ino) bool { return len(minus(a, b)) == 0 && len(minus(b, a)) == 0 }

// minus returns the directories of a not in b.
func minus(a, b []Ino) []Ino {
	var out []Ino
	for _, x := range a {
		found := false
		for _, y := range b {
			found = found || x == y
		}
		if !found {
			out = append(out, x)
		}
	}
	return out
}
