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

// BlockSizeXattr is the extended attribute through which the block size
// of the files made in a directory is set (decimal bytes, MinFileBlockSize
// to MaxFileBlockSize): new files and directories inherit their parent's,
// as they do its policy. It can also be set on an unnamed, empty regular
// file (an O_TMPFILE inode nobody else can have open: its block size can
// change before any block is written), which is how the S3 endpoint gives
// a multipart part blocks that divide it. A file's block size never
// changes once it has a name or content. Read with getxattr, never listed
// (copying it with the other xattrs would fail on a written file), never
// removed.
const BlockSizeXattr = "user.tessera.blocksize"

// The bounds of BlockSizeXattr: at least an inline block 0, at most what
// a block server takes by default (internal/block/server).
const (
	MinFileBlockSize = InlineMax
	MaxFileBlockSize = 64 << 20
)

// MaxReplicas bounds the replication factor (the copies of a spec in all).
const MaxReplicas = placement.MaxCopies

// fieldAttr exposes an inode field as an extended attribute: it is stored in
// the inode record, not as an xattr key, so lookups carry it for free.
type fieldAttr struct {
	get   func(rec *inodeRec) (string, bool)
	set   func(rec *inodeRec, v string) error
	clear func(rec *inodeRec) // nil: it cannot be removed
	// unlisted keeps it out of ListXattr (it is still read by name).
	unlisted bool
}

// IsFieldXattr reports whether name is one of the xattrs that expose an
// inode field (PolicyXattr, ReplicasXattr, BlockSizeXattr).
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
	BlockSizeXattr: {
		get: func(rec *inodeRec) (string, bool) {
			return strconv.FormatUint(uint64(rec.BlockSize), 10), rec.IsDir() || rec.IsRegular()
		},
		set:      setBlockSize,
		unlisted: true,
	},
}

// setBlockSize sets the block size of a directory's new files, or of an
// unnamed empty regular file.
func setBlockSize(rec *inodeRec, v string) error {
	n, err := strconv.ParseUint(v, 10, 32)
	if err != nil || n < MinFileBlockSize || n > MaxFileBlockSize {
		return fmt.Errorf("%s: want a number of bytes from %d to %d: %w", BlockSizeXattr, MinFileBlockSize, MaxFileBlockSize, ErrInvalid)
	}
	switch {
	case rec.IsDir():
	case rec.IsRegular() && rec.Nlink == 0 && rec.Size == 0 && !rec.HasInline:
	default:
		return fmt.Errorf("%s: set it on a directory (for the files made in it) or on an unnamed empty file, not on a named or written file: %w", BlockSizeXattr, ErrInvalid)
	}
	rec.BlockSize = uint32(n)
	return nil
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
