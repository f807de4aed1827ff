package meta

import (
	"context"
	"fmt"
	"sort"
	"syscall"

	"tessera/internal/kv"
)

// QuotaAPI sets and reads directory quotas (quota.go). *Service
// implements it.
type QuotaAPI interface {
	// SetQuota sets the limits of the quota of directory q.Dir (0: none),
	// counting the usage under it the first time; it returns the quota.
	//tessera:authz admin cluster logged
	SetQuota(ctx context.Context, q Quota) (Quota, error)
	// Quota returns the quota of directory dir (ErrNotFound if none).
	//tessera:authz read tree
	//tessera:rpc GetQuota
	Quota(ctx context.Context, dir Ino) (Quota, error)
	// Quotas lists every quota, by directory.
	//tessera:authz read cluster
	Quotas(ctx context.Context) ([]Quota, error)
	// RemoveQuota drops the quota of directory dir (ErrNotFound if none).
	//tessera:authz admin cluster logged
	RemoveQuota(ctx context.Context, dir Ino) error
	// QuotaOf returns the innermost quota whose tree holds inode ino (a
	// directory's own quota included): what df in it shows (ErrNotFound
	// if none).
	//tessera:authz read tree: df in a quota tree
	QuotaOf(ctx context.Context, ino Ino) (Quota, error)
	// CheckQuota returns directory dir's quota beside what a walk of its
	// tree counts, in one snapshot (quota_check.go): what fsck compares.
	//tessera:authz admin cluster: fsck: walks a whole tree
	CheckQuota(ctx context.Context, dir Ino) (QuotaCheck, error)
}

var _ QuotaAPI = (*Service)(nil)

// SetQuota implements QuotaAPI. A directory without a quota yet has the
// usage under it counted by a walk in the same transaction, which must fit
// within Options.MaxTxnOps (ErrTooBig otherwise: set the quota when the
// tree is smaller). A tree holding a file with a link outside it is
// refused (EXDEV): its usage could not follow the file.
func (s *Service) SetQuota(ctx context.Context, q Quota) (Quota, error) {
	var out Quota
	err := s.updateCounted(ctx, func(t txn) error {
		if _, err := t.getDir(q.Dir); err != nil {
			return err
		}
		cur, ok, err := t.getQuota(q.Dir)
		if err != nil {
			return err
		}
		if !ok {
			cur = &quotaState{Quota: Quota{Dir: q.Dir}, loaded: true}
			if cur.Bytes, cur.Inodes, err = t.quotaWalk(q.Dir, s.soft(), 0); err != nil {
				return err
			}
		}
		cur.MaxBytes, cur.MaxInodes = q.MaxBytes, q.MaxInodes
		out = cur.Quota
		return t.putQuota(cur)
	})
	if err != nil {
		return Quota{}, fmt.Errorf("set quota of directory %d: %w", q.Dir, err)
	}
	return out, nil
}

// Quota implements QuotaAPI.
func (s *Service) Quota(ctx context.Context, dir Ino) (Quota, error) {
	var out Quota
	err := s.view(ctx, func(t txn) error {
		q, ok, err := t.getQuota(dir)
		if err != nil {
			return err
		}
		if !ok {
			return ErrNotFound
		}
		out = q.Quota
		return nil
	})
	if err != nil {
		return Quota{}, fmt.Errorf("quota of directory %d: %w", dir, err)
	}
	return out, nil
}

// Quotas implements QuotaAPI.
func (s *Service) Quotas(ctx context.Context) ([]Quota, error) {
	var out []Quota
	err := s.view(ctx, func(t txn) error {
		qs, err := t.readQuotas()
		out = out[:0]
		for _, q := range qs {
			if err == nil {
				err = t.loadUsage(q)
			}
			out = append(out, q.Quota)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("list quotas: %w", err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Dir < out[j].Dir })
	return out, nil
}

// RemoveQuota implements QuotaAPI.
func (s *Service) RemoveQuota(ctx context.Context, dir Ino) error {
	err := s.update(ctx, func(t txn) error {
		if _, ok, err := t.Get(quotaKey(dir)); err != nil || !ok {
			if err == nil {
				err = ErrNotFound
			}
			return err
		}
		return t.deleteQuota(dir)
	})
	if err != nil {
		return fmt.Errorf("remove quota of directory %d: %w", dir, err)
	}
	return nil
}

// QuotaOf implements QuotaAPI.
func (s *Service) QuotaOf(ctx context.Context, ino Ino) (Quota, error) {
	var out Quota
	err := s.view(ctx, func(t txn) error {
		qs, err := t.readQuotas()
		if err != nil {
			return err
		}
		if len(qs) == 0 {
			return ErrNotFound
		}
		rec, err := t.getInode(ino)
		if err != nil {
			return err
		}
		dir := ino
		if !rec.IsDir() {
			dir = rec.Parent
		}
		chain, err := t.quotaChain(qs, dir)
		if err != nil {
			return err
		}
		if len(chain) == 0 {
			return ErrNotFound
		}
		q := qs[chain[0]]
		if err := t.loadUsage(q); err != nil {
			return err
		}
		out = q.Quota
		return nil
	})
	if err != nil {
		return Quota{}, fmt.Errorf("quota of inode %d: %w", ino, err)
	}
	return out, nil
}

// quotaWalk counts what lies under directory dir as a quota counts it:
// every inode once (orphans filed under its directories too) and the
// bytes of the regular files. It stops with ErrTooBig past b or past
// maxInodes inodes (0: no bound), and with EXDEV at a file with a link
// outside the tree.
func (t txn) quotaWalk(dir Ino, b budget, maxInodes uint64) (bytes, inodes uint64, _ error) {
	names := map[Ino]uint32{} // non-directories: names seen
	var linked []*inodeRec    // files with several links
	seen := map[Ino]bool{}
	queue := []Ino{dir}
	count := func(rec *inodeRec) {
		if !seen[rec.Ino] {
			seen[rec.Ino] = true
			inodes++
			bytes += uint64(bytesOf(rec))
		}
	}
	for len(queue) > 0 {
		d := queue[0]
		queue = queue[1:]
		if !t.fits(b) {
			return 0, 0, fmt.Errorf("the tree under directory %d is too large to count in one transaction: %w", dir, ErrTooBig)
		}
		if maxInodes > 0 && inodes > maxInodes {
			return 0, 0, fmt.Errorf("the tree under directory %d holds more than %d inodes: %w", dir, maxInodes, ErrTooBig)
		}
		var kids []Ino
		p := dentryPrefix(d)
		err := t.Scan(p, kv.PrefixEnd(p), func(_, v []byte) (bool, error) {
			ino, _, err := decodeDentry(v)
			kids = append(kids, ino)
			return err == nil, err
		})
		if err != nil {
			return 0, 0, err
		}
		op := inoKey(pfxOrphanDir, d)
		var orphans []Ino
		err = t.Scan(op, kv.PrefixEnd(op), func(k, _ []byte) (bool, error) {
			if len(k) != len(op)+8 {
				return false, corruptf("orphan directory key %q", k)
			}
			orphans = append(orphans, Ino(be64(k[len(op):])))
			return true, nil
		})
		if err != nil {
			return 0, 0, err
		}
		for _, ino := range kids {
			rec, err := t.getInode(ino)
			if err != nil {
				return 0, 0, err
			}
			count(rec)
			if rec.IsDir() {
				queue = append(queue, ino)
				continue
			}
			names[ino]++
			if rec.Nlink > 1 && names[ino] == 1 {
				linked = append(linked, rec)
			}
		}
		for _, ino := range orphans {
			rec, err := t.getInode(ino)
			if err != nil {
				return 0, 0, err
			}
			count(rec)
		}
	}
	for _, rec := range linked {
		if names[rec.Ino] < rec.Nlink {
			return 0, 0, fmt.Errorf("file %d has a link outside directory %d: %w", rec.Ino, dir, syscall.EXDEV)
		}
	}
	return bytes, inodes, nil
}
