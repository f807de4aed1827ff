package authz

import (
	"context"
	"fmt"
	"syscall"

	"tessera/internal/meta"
)

var _ meta.FilesetReadsAPI = (*view)(nil)

// AddFilesetReads implements meta.FilesetReadsAPI: any unconfined caller
// that may read the namespace may report what it read.
func (v *view) AddFilesetReads(ctx context.Context, root meta.Ino, d meta.FilesetReads) error {
	if _, err := v.a.authorize(ctx, "AddFilesetReads"); err != nil {
		return err
	}
	ra, ok := v.a.svc.(meta.FilesetReadsAPI)
	if !ok {
		return fmt.Errorf("meta AddFilesetReads: the service has no filesets: %w", syscall.ENOTSUP)
	}
	return ra.AddFilesetReads(ctx, root, d)
}
