package meta

import (
	"context"
	"encoding/binary"
	"fmt"
)

// FilesetReads counts the bytes mounts read from a fileset's files since
// the fileset was made: Hit were served from the cache (the namespace and
// the block servers alone), Miss needed a gateway to fetch them from home
// first. Reads the kernel's page cache answered never reach a mount and
// are not counted. The hit ratio of `tessera fileset status` is
// Hit / (Hit + Miss).
type FilesetReads struct {
	HitBytes, MissBytes uint64
}

// Ratio is the hit ratio, 0..1 (0 when nothing was read).
func (r FilesetReads) Ratio() float64 {
	if r.HitBytes+r.MissBytes == 0 {
		return 0
	}
	return float64(r.HitBytes) / float64(r.HitBytes+r.MissBytes)
}

// FilesetReadsAPI is how mounts report what they read from filesets. A
// mount sends its counts now and then (deltas); Fileset and Filesets
// return the sums in Fileset.Reads.
type FilesetReadsAPI interface {
	// AddFilesetReads adds d to the counts of the fileset rooted at root
	// (ErrNotFound if there is none).
	//tessera:authz read cluster: a mount's read counts
	AddFilesetReads(ctx context.Context, root Ino, d FilesetReads) error
}

// pfxFilesetReads keys a fileset's read counts ("G" root): apart from the
// fileset record, so that counting never conflicts with its settings.
const pfxFilesetReads = 'G'

func filesetReadsKey(root Ino) []byte { return inoKey(pfxFilesetReads, root) }

// AddFilesetReads implements FilesetReadsAPI.
func (s *Service) AddFilesetReads(ctx context.Context, root Ino, d FilesetReads) error {
	if d.HitBytes == 0 && d.MissBytes == 0 {
		return nil
	}
	err := s.update(ctx, func(t txn) error {
		if _, err := t.getFileset(root); err != nil {
			return err
		}
		cur, err := t.getFilesetReads(root)
		if err != nil {
			return err
		}
		cur.HitBytes += d.HitBytes
		cur.MissBytes += d.MissBytes
		v := make([]byte, 16)
		binary.BigEndian.PutUint64(v, cur.HitBytes)
		binary.BigEndian.PutUint64(v[8:], cur.MissBytes)
		return t.Put(filesetReadsKey(root), v)
	})
	if err != nil {
		return fmt.Errorf("fileset %d: add reads: %w", root, err)
	}
	return nil
}

// getFilesetReads returns the read counts of the fileset rooted at root
// (zero when none were reported).
func (t txn) getFilesetReads(root Ino) (FilesetReads, error) {
	v, ok, err := t.Get(filesetReadsKey(root))
	if err != nil || !ok {
		return FilesetReads{}, err
	}
	if len(v) != 16 {
		return FilesetReads{}, fmt.Errorf("fileset %d: read counts of %d bytes, want 16: %w", root, len(v), ErrCorrupt)
	}
	return FilesetReads{HitBytes: binary.BigEndian.Uint64(v), MissBytes: binary.BigEndian.Uint64(v[8:])}, nil
}
