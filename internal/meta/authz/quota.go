package authz

import (
	"context"

	"tessera/internal/meta"
)

// The quota methods (meta.QuotaAPI) are generated (zz_view_gen.go) from
// their directives: setting and removing a quota is administration
// (logged); reading one is reading the namespace, so a confined identity
// reads the quotas of its own subtree (their directories mapped) and may
// not list every quota of the cluster. What is written here is how a
// quota is mapped and logged.

// outQuota maps the directory of a quota in a reply to c. The quota may be
// on a directory above a confined caller's root (QuotaOf's: its project's,
// what df shows): its limits and usage are shown, its directory reads as
// 0. (Not through in: that reads meta.RootIno as the caller's own root,
// and logs a refusal, where a reply is only being mapped.)
func (v *view) outQuota(ctx context.Context, c caller, method string, q *meta.Quota) {
	if c.root != 0 && q.Dir != 0 && q.Dir != c.root {
		if ok, err := v.a.svc.Within(ctx, q.Dir, c.root); err != nil || !ok {
			q.Dir = 0
		}
	}
	q.Dir = c.out(q.Dir)
}

// logQuota is what an administrator's call with quota q logs of it.
func (*view) logQuota(q meta.Quota) []any {
	return []any{"dir", uint64(q.Dir), "max_bytes", q.MaxBytes, "max_inodes", q.MaxInodes}
}
