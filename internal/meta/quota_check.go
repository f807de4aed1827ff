package meta

import (
	"context"
	"fmt"
)

// QuotaCheck is a quota as the quota hook keeps it beside what a walk of
// its tree counts now, in one snapshot: what `tessera fsck` compares.
type QuotaCheck struct {
	Quota             // limits and the usage kept change by change
	WalkBytes  uint64 // bytes of the regular files under Dir, by a walk
	WalkInodes uint64 // inodes under Dir (not Dir itself), by a walk
}

// Agrees reports whether the kept usage is what the walk counted.
func (c QuotaCheck) Agrees() bool { return c.Bytes == c.WalkBytes && c.Inodes == c.WalkInodes }

// MaxQuotaCheckInodes bounds the walk of CheckQuota: a larger tree is
// refused with ErrTooBig rather than held in memory (about 100 bytes an
// inode: 400 MB at the bound).
const MaxQuotaCheckInodes = 4 << 20

// CheckQuota walks the tree of directory dir's quota in one read-only
// snapshot and returns its kept usage beside the walk's count (files
// unlinked while open, which still count, included). ErrNotFound when dir
// has no quota.
func (s *Service) CheckQuota(ctx context.Context, dir Ino) (QuotaCheck, error) {
	var out QuotaCheck
	err := s.view(ctx, func(t txn) error {
		q, ok, err := t.getQuota(dir)
		if err != nil {
			return err
		}
		if !ok {
			return ErrNotFound
		}
		out.Quota = q.Quota
		out.WalkBytes, out.WalkInodes, err = t.quotaWalk(dir, budget{}, MaxQuotaCheckInodes)
		return err
	})
	if err != nil {
		return QuotaCheck{}, fmt.Errorf("check quota of directory %d: %w", dir, err)
	}
	return out, nil
}
