package metrics

// The optional meta interfaces of the decorator (metaapi.go): each call is
// passed on through meta.Forward (meta.ErrNotSupported when the wrapped
// API lacks the capability) and recorded under its op name.

import (
	"context"
	"time"

	"tessera/internal/meta"
)

var (
	_ meta.BlockLister     = (*metaAPI)(nil)
	_ meta.FilesetAPI      = (*metaAPI)(nil)
	_ meta.FilesetReadsAPI = (*metaAPI)(nil)
	_ meta.EvictAPI        = (*metaAPI)(nil)
	_ meta.VanishAPI       = (*metaAPI)(nil)
	_ meta.WritebackAPI    = (*metaAPI)(nil)
	_ meta.GatewaysAPI     = (*metaAPI)(nil)
)

// ListBlocks implements meta.BlockLister.
func (a *metaAPI) ListBlocks(ctx context.Context, afterIno meta.Ino, afterIndex uint64, limit int) (refs []meta.BlockRef, more bool, err error) {
	defer a.m.done("list_blocks", time.Now(), &err)
	return a.fwd.ListBlocks(ctx, afterIno, afterIndex, limit)
}

// CreateFileset implements meta.FilesetAPI.
func (a *metaAPI) CreateFileset(ctx context.Context, f meta.Fileset) (out meta.Fileset, err error) {
	defer a.m.done("create_fileset", time.Now(), &err)
	return a.fwd.CreateFileset(ctx, f)
}

// Fileset implements meta.FilesetAPI.
func (a *metaAPI) Fileset(ctx context.Context, root meta.Ino) (out meta.Fileset, err error) {
	defer a.m.done("fileset", time.Now(), &err)
	return a.fwd.Fileset(ctx, root)
}

// Filesets implements meta.FilesetAPI.
func (a *metaAPI) Filesets(ctx context.Context) (out []meta.Fileset, err error) {
	defer a.m.done("filesets", time.Now(), &err)
	return a.fwd.Filesets(ctx)
}

// DeleteFileset implements meta.FilesetAPI.
func (a *metaAPI) DeleteFileset(ctx context.Context, root meta.Ino) (err error) {
	defer a.m.done("delete_fileset", time.Now(), &err)
	return a.fwd.DeleteFileset(ctx, root)
}

// IngestDir implements meta.FilesetAPI.
func (a *metaAPI) IngestDir(ctx context.Context, req meta.IngestDirReq) (out meta.Inode, err error) {
	defer a.m.done("ingest_dir", time.Now(), &err)
	return a.fwd.IngestDir(ctx, req)
}

// SetGateway implements meta.FilesetAPI.
func (a *metaAPI) SetGateway(ctx context.Context, ino meta.Ino, g meta.GatewayInfo, ifChange uint64) (out meta.Inode, err error) {
	defer a.m.done("set_gateway", time.Now(), &err)
	return a.fwd.SetGateway(ctx, ino, g, ifChange)
}

// AddFilesetReads implements meta.FilesetReadsAPI.
func (a *metaAPI) AddFilesetReads(ctx context.Context, root meta.Ino, d meta.FilesetReads) (err error) {
	defer a.m.done("add_fileset_reads", time.Now(), &err)
	return a.fwd.AddFilesetReads(ctx, root, d)
}

// EvictData implements meta.EvictAPI.
func (a *metaAPI) EvictData(ctx context.Context, ino meta.Ino) (out meta.Inode, err error) {
	defer a.m.done("evict_data", time.Now(), &err)
	return a.fwd.EvictData(ctx, ino)
}

// RemoveVanished implements meta.VanishAPI.
func (a *metaAPI) RemoveVanished(ctx context.Context, parent meta.Ino, name string, ino meta.Ino, isDir bool) (err error) {
	defer a.m.done("remove_vanished", time.Now(), &err)
	return a.fwd.RemoveVanished(ctx, parent, name, ino, isDir)
}

// ClaimWriteback implements meta.WritebackAPI.
func (a *metaAPI) ClaimWriteback(ctx context.Context, req meta.ClaimReq) (out []meta.WBOp, err error) {
	defer a.m.done("claim_writeback", time.Now(), &err)
	return a.fwd.ClaimWriteback(ctx, req)
}

// WritebackDone implements meta.WritebackAPI.
func (a *metaAPI) WritebackDone(ctx context.Context, op meta.WBOp, token string) (err error) {
	defer a.m.done("writeback_done", time.Now(), &err)
	return a.fwd.WritebackDone(ctx, op, token)
}

// WritebackFailed implements meta.WritebackAPI.
func (a *metaAPI) WritebackFailed(ctx context.Context, op meta.WBOp, cause string, permanent bool, retryAt time.Time) (err error) {
	defer a.m.done("writeback_failed", time.Now(), &err)
	return a.fwd.WritebackFailed(ctx, op, cause, permanent, retryAt)
}

// WritebackToken implements meta.WritebackAPI.
func (a *metaAPI) WritebackToken(ctx context.Context, ino meta.Ino) (out string, err error) {
	defer a.m.done("writeback_token", time.Now(), &err)
	return a.fwd.WritebackToken(ctx, ino)
}

// WritebackStats implements meta.WritebackAPI.
func (a *metaAPI) WritebackStats(ctx context.Context, root meta.Ino) (out meta.WBStats, err error) {
	defer a.m.done("writeback_stats", time.Now(), &err)
	return a.fwd.WritebackStats(ctx, root)
}

// RequestFlush implements meta.WritebackAPI.
func (a *metaAPI) RequestFlush(ctx context.Context, root meta.Ino) (err error) {
	defer a.m.done("request_flush", time.Now(), &err)
	return a.fwd.RequestFlush(ctx, root)
}

// RegisterGateway implements meta.GatewaysAPI.
func (a *metaAPI) RegisterGateway(ctx context.Context, g meta.GatewayNode) (out []meta.GatewayNode, err error) {
	defer a.m.done("register_gateway", time.Now(), &err)
	return a.fwd.RegisterGateway(ctx, g)
}

// Gateways implements meta.GatewaysAPI.
func (a *metaAPI) Gateways(ctx context.Context) (out []meta.GatewayNode, err error) {
	defer a.m.done("gateways", time.Now(), &err)
	return a.fwd.Gateways(ctx)
}
