package mountroot

import "tessera/internal/meta"

// The re-rooted meta.QuotaAPI: its methods are generated
// (zz_mountroot_gen.go); quotas' directories are mapped both ways here.

// mapQuota maps a quota's directory.
func (a *API) mapQuota(q *meta.Quota) { q.Dir = a.m(q.Dir) }

// mapQuotaCheck maps the directory of fsck's comparison.
func (a *API) mapQuotaCheck(c *meta.QuotaCheck) { a.mapQuota(&c.Quota) }
