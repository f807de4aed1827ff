package authz

import "tessera/internal/meta"

// The fileset methods (meta.FilesetAPI, FilesetReadsAPI, EvictAPI,
// VanishAPI) and the write-back queue's (meta.WritebackAPI) are generated
// (zz_view_gen.go) from their directives. All reach across the cluster,
// so confined identities are refused them; creating and deleting
// filesets is administration (logged), reading them or the queue's
// figures is reading the namespace, and what concerns the cache of home
// (recording what was cached, eviction, vanished names, claiming and
// settling queued operations) is the caching role's (CacheHome: gateways
// and admins).

// logFileset is what an administrator's call with fileset f logs of it.
func (*view) logFileset(f meta.Fileset) []any {
	return []any{"root", uint64(f.Root), "home", f.Home, "mode", string(f.Mode)}
}
