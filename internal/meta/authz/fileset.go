package authz

import (
	"context"
	"fmt"
	"syscall"

	"tessera/internal/meta"
)

// The fileset methods (meta.FilesetAPI). All reach across the cluster, so
// confined identities are refused them; creating and deleting filesets is
// administration (logged), reading them is reading the namespace, and
// recording what was cached of home is the gateway role's (CacheHome).

var _ meta.FilesetAPI = (*view)(nil)

// filesets authorizes method and returns the service's fileset half.
func (v *view) filesets(ctx context.Context, method string) (caller, meta.FilesetAPI, error) {
	c, err := v.a.authorize(ctx, method)
	if err != nil {
		return c, nil, err
	}
	fa, ok := v.a.svc.(meta.FilesetAPI)
	if !ok {
		return c, nil, fmt.Errorf("meta %s: the service has no filesets: %w", method, syscall.ENOTSUP)
	}
	return c, fa, nil
}

// CreateFileset implements meta.FilesetAPI; it is logged with who asked.
func (v *view) CreateFileset(ctx context.Context, f meta.Fileset) (meta.Fileset, error) {
	c, fa, err := v.filesets(ctx, "CreateFileset")
	if err != nil {
		return meta.Fileset{}, err
	}
	out, err := fa.CreateFileset(ctx, f)
	v.a.admin(ctx, c.id, "CreateFileset", err, "root", uint64(f.Root), "home", f.Home, "mode", string(f.Mode))
	return out, err
}

// Fileset implements meta.FilesetAPI.
func (v *view) Fileset(ctx context.Context, root meta.Ino) (meta.Fileset, error) {
	_, fa, err := v.filesets(ctx, "Fileset")
	if err != nil {
		return meta.Fileset{}, err
	}
	return fa.Fileset(ctx, root)
}

// Filesets implements meta.FilesetAPI.
func (v *view) Filesets(ctx context.Context) ([]meta.Fileset, error) {
	_, fa, err := v.filesets(ctx, "Filesets")
	if err != nil {
		return nil, err
	}
	return fa.Filesets(ctx)
}

// DeleteFileset implements meta.FilesetAPI; it is logged with who asked.
func (v *view) DeleteFileset(ctx context.Context, root meta.Ino) error {
	c, fa, err := v.filesets(ctx, "DeleteFileset")
	if err != nil {
		return err
	}
	err = fa.DeleteFileset(ctx, root)
	v.a.admin(ctx, c.id, "DeleteFileset", err, "root", uint64(root))
	return err
}

// IngestDir implements meta.FilesetAPI.
func (v *view) IngestDir(ctx context.Context, req meta.IngestDirReq) (meta.Inode, error) {
	_, fa, err := v.filesets(ctx, "IngestDir")
	if err != nil {
		return meta.Inode{}, err
	}
	return fa.IngestDir(ctx, req)
}

// SetGateway implements meta.FilesetAPI.
func (v *view) SetGateway(ctx context.Context, ino meta.Ino, g meta.GatewayInfo, ifChange uint64) (meta.Inode, error) {
	_, fa, err := v.filesets(ctx, "SetGateway")
	if err != nil {
		return meta.Inode{}, err
	}
	return fa.SetGateway(ctx, ino, g, ifChange)
}
