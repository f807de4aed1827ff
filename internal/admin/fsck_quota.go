package admin

import (
	"context"
	"errors"
	"fmt"
	"io"

	"tessera/internal/meta"
)

// fsckQuotas compares every directory quota's kept usage with a walk of
// its tree (meta.QuotaAPI.CheckQuota, one snapshot each) and reports each
// that differs as a problem (QuotaDrift); a tree too large to walk, or
// removed since the listing, is said and skipped. A service without
// quotas (none set, or ErrNotSupported) has nothing to check, and no
// "quotas" phase is reported.
func fsckQuotas(ctx context.Context, c *Cluster, w io.Writer, r *FsckReport) error {
	qa, ok := c.Meta.(meta.QuotaAPI)
	if !ok {
		return nil
	}
	qs, err := qa.Quotas(ctx)
	if errors.Is(err, meta.ErrNotSupported) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("list quotas: %w", err)
	}
	if len(qs) == 0 {
		return nil // no phase to report
	}
	c.report(Progress{Op: "fsck", Phase: "quotas", Total: int64(len(qs))})
	for i, q := range qs {
		chk, err := qa.CheckQuota(ctx, q.Dir)
		switch {
		case errors.Is(err, meta.ErrNotFound):
			continue // removed since the listing
		case errors.Is(err, meta.ErrTooBig):
			fmt.Fprintf(w, "quota of directory %d: not checked: %v\n", q.Dir, err)
			continue
		case err != nil:
			return err
		}
		r.Quotas++
		if !chk.Agrees() {
			r.QuotaDrift++
			fmt.Fprintf(w, "quota of directory %d: usage kept %d bytes, %d inodes; a walk of its tree counts %d bytes, %d inodes\n",
				q.Dir, chk.Bytes, chk.Inodes, chk.WalkBytes, chk.WalkInodes)
		}
		c.report(Progress{Op: "fsck", Phase: "quotas", Done: int64(i + 1), Total: int64(len(qs))})
	}
	return nil
}
