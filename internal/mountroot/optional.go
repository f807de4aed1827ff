package mountroot

// The optional meta interfaces (meta.OptionalInterfaces) seen from the
// directory: every inode number in a call and its reply is swapped as in
// the API's own methods, fileset roots and queued operations' inodes
// included. Each is passed on through meta.Forward, so an API below
// without the capability answers meta.ErrNotSupported.

import (
	"context"
	"time"

	"tessera/internal/meta"
)

var (
	_ meta.FilesetAPI      = (*API)(nil)
	_ meta.FilesetReadsAPI = (*API)(nil)
	_ meta.EvictAPI        = (*API)(nil)
	_ meta.VanishAPI       = (*API)(nil)
	_ meta.WritebackAPI    = (*API)(nil)
	_ meta.GatewaysAPI     = (*API)(nil)
)

func (a *API) fwd() meta.Forward { return meta.Forward{Next: a.api} }

// fileset maps a fileset's root.
func (a *API) fileset(f meta.Fileset, err error) (meta.Fileset, error) {
	f.Root = a.m(f.Root)
	return f, err
}

// op maps a queued operation's inodes.
func (a *API) op(op meta.WBOp) meta.WBOp {
	op.Root, op.Ino = a.m(op.Root), a.m(op.Ino)
	return op
}

// CreateFileset implements meta.FilesetAPI.
func (a *API) CreateFileset(ctx context.Context, f meta.Fileset) (meta.Fileset, error) {
	f.Root = a.m(f.Root)
	return a.fileset(a.fwd().CreateFileset(ctx, f))
}

// Fileset implements meta.FilesetAPI.
func (a *API) Fileset(ctx context.Context, root meta.Ino) (meta.Fileset, error) {
	return a.fileset(a.fwd().Fileset(ctx, a.m(root)))
}

// Filesets implements meta.FilesetAPI.
func (a *API) Filesets(ctx context.Context) ([]meta.Fileset, error) {
	l, err := a.fwd().Filesets(ctx)
	for i := range l {
		l[i].Root = a.m(l[i].Root)
	}
	return l, err
}

// IngestDir implements meta.FilesetAPI.
func (a *API) IngestDir(ctx context.Context, req meta.IngestDirReq) (meta.Inode, error) {
	req.Dir = a.m(req.Dir)
	return a.inode(a.fwd().IngestDir(ctx, req))
}

// SetGateway implements meta.FilesetAPI.
func (a *API) SetGateway(ctx context.Context, ino meta.Ino, g meta.GatewayInfo, ifChange uint64) (meta.Inode, error) {
	g.Fileset = a.m(g.Fileset)
	return a.inode(a.fwd().SetGateway(ctx, a.m(ino), g, ifChange))
}

// ClaimWriteback implements meta.WritebackAPI.
func (a *API) ClaimWriteback(ctx context.Context, req meta.ClaimReq) ([]meta.WBOp, error) {
	req.Root = a.m(req.Root)
	ops, err := a.fwd().ClaimWriteback(ctx, req)
	for i := range ops {
		ops[i] = a.op(ops[i])
	}
	return ops, err
}

// WritebackDone implements meta.WritebackAPI.
func (a *API) WritebackDone(ctx context.Context, op meta.WBOp, token string) error {
	return a.fwd().WritebackDone(ctx, a.op(op), token)
}

// WritebackFailed implements meta.WritebackAPI.
func (a *API) WritebackFailed(ctx context.Context, op meta.WBOp, cause string, permanent bool, retryAt time.Time) error {
	return a.fwd().WritebackFailed(ctx, a.op(op), cause, permanent, retryAt)
}

// WritebackStats implements meta.WritebackAPI.
func (a *API) WritebackStats(ctx context.Context, root meta.Ino) (meta.WBStats, error) {
	st, err := a.fwd().WritebackStats(ctx, a.m(root))
	for i := range st.Failed {
		st.Failed[i] = a.op(st.Failed[i])
	}
	return st, err
}

// RegisterGateway implements meta.GatewaysAPI.
func (a *API) RegisterGateway(ctx context.Context, g meta.GatewayNode) ([]meta.GatewayNode, error) {
	return a.fwd().RegisterGateway(ctx, g)
}

// Gateways implements meta.GatewaysAPI.
func (a *API) Gateways(ctx context.Context) ([]meta.GatewayNode, error) {
	return a.fwd().Gateways(ctx)
}
