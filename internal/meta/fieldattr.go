package meta

import (
	"fmt"
	"strconv"

	"tessera/internal/placement"
	"tessera/internal/policy"
)

// ReplicasXattr is the extended attribute through which a file's or a
// directory's replication spec is read and set: a number of copies
// ("1".."9") or copies per named site ("a:1,b:1,c:1", at most 9 in all;
// placement.ParseSpec); absent = the cluster default. New files and
// directories inherit their parent's.
const ReplicasXattr = "user.tessera.replicas"

// PolicyXattr is the extended attribute through which a file's or a
// directory's consistency policy is read and set (a name policy.Lookup
// knows; absent = the mount's default). New files and directories inherit
// their parent's.
const PolicyXattr = "user.tessera.policy"

// MaxReplicas bounds the replication factor (the copies of a spec in all).
const MaxReplicas = placement.MaxCopies

// fieldAttr exposes an inode field as an extended attribute: it is stored in
// the inode record, not as an xattr key, so lookups carry it for free.
type fieldAttr struct {
	get   func(rec *inodeRec) (string, bool)
	set   func(rec *inodeRec, v string) error
	clear func(rec *inodeRec)
}

// IsFieldXattr reports whether name is one of the xattrs that expose an
// inode field (PolicyXattr, ReplicasXattr).
func IsFieldXattr(name string) bool {
	_, ok := fieldAttrs[name]
	return ok
}

// fieldAttrs is read-only after init.
var fieldAttrs = map[string]fieldAttr{
	ReplicasXattr: {
		get: func(rec *inodeRec) (string, bool) {
			if rec.Sites != "" {
				return rec.Sites, true
			}
			return strconv.Itoa(int(rec.Replicas)), rec.Replicas != 0
		},
		set: func(rec *inodeRec, v string) error {
			sp, err := placement.ParseSpec(v)
			if err != nil {
				return fmt.Errorf("%s: %w (%w)", ReplicasXattr, err, ErrInvalid)
			}
			rec.Replicas, rec.Sites = uint8(sp.N), ""
			if len(sp.Sites) > 0 {
				rec.Sites = sp.String()
			}
			return nil
		},
		clear: func(rec *inodeRec) { rec.Replicas, rec.Sites = 0, "" },
	},
	PolicyXattr: {
		get: func(rec *inodeRec) (string, bool) { return rec.Policy, rec.Policy != "" },
		set: func(rec *inodeRec, v string) error {
			p, err := checkPolicy(v)
			if err != nil {
				return fmt.Errorf("%s: %w", PolicyXattr, err)
			}
			rec.Policy = p
			return nil
		},
		clear: func(rec *inodeRec) { rec.Policy = "" },
	},
}

// checkPolicy returns the name of the policy called name, or an error
// matching ErrInvalid (and policy.ErrUnknownPolicy) that lists the valid
// names.
func checkPolicy(name string) (string, error) {
	p, err := policy.Lookup(name)
	if err != nil {
		return "", fmt.Errorf("%w (%w)", err, ErrInvalid)
	}
	return p.Name(), nil
}

// setFieldAttr applies SetXattr's flag rules to a field attribute.
func setFieldAttr(fa fieldAttr, rec *inodeRec, value []byte, flags uint32) error {
	_, present := fa.get(rec)
	switch {
	case present && flags&XattrCreate != 0:
		return ErrExist
	case !present && flags&XattrReplace != 0:
		return ErrNoAttr
	}
	return fa.set(rec, string(value))
}
