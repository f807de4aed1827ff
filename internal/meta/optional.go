package meta

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	"tessera/internal/block"
)

// Optional interfaces. Beyond API the service offers capabilities that
// callers find with a type assertion (api.(FilesetAPI)): the ones
// OptionalInterfaces lists. *Service and the RPC clients implement every
// one of them. A decorator of an API — a type that wraps another API to
// count, wait, authorize or re-root its calls (metrics, metawait, authz,
// mountroot) — implements every one of them too, passing each call on
// when the API it wraps has the capability and answering ErrNotSupported
// when it does not (BlockLister: a walk with WalkBlocks instead, see
// ListBlocksOf). So a capability check sees through any stack of
// decorators, and a missing capability shows at the call as ENOTSUP, the
// way it does over RPC to a service without it. A decorator that returned
// its own type with only API's methods would hide the capabilities below
// it (`tessera up --metrics` once broke every `tessera fileset` command
// so). The test in optional_test.go walks every optional interface through
// every decorator and fails on a decorator type it does not know.
// Forward implements the capabilities for decorators that pass calls on
// unchanged. SessionBinder is not in Forward: binding must return the
// decorator around the bound API, which only the decorator can make.

// OptionalInterfaces returns the optional interfaces of an API, as
// interface types; a new one must be added here.
func OptionalInterfaces() []reflect.Type {
	return []reflect.Type{
		reflect.TypeFor[SessionBinder](),
		reflect.TypeFor[BlockLister](),
		reflect.TypeFor[FilesetAPI](),
		reflect.TypeFor[FilesetReadsAPI](),
		reflect.TypeFor[EvictAPI](),
		reflect.TypeFor[VanishAPI](),
		reflect.TypeFor[WritebackAPI](),
		reflect.TypeFor[GatewaysAPI](),
		reflect.TypeFor[QuotaAPI](),
	}
}

// capability returns next as T, or ErrNotSupported naming op.
func capability[T any](next API, op string) (T, error) {
	c, ok := next.(T)
	if !ok {
		var zero T
		return zero, fmt.Errorf("meta %s: the API below does not offer it: %w", op, ErrNotSupported)
	}
	return c, nil
}

// ListBlocksOf is BlockLister.ListBlocks of api when it has it, else one
// page of api.WalkBlocks from the cursor on (it walks the entries before
// the cursor again: a fallback for APIs that cannot list by page).
func ListBlocksOf(ctx context.Context, api API, afterIno Ino, afterIndex uint64, limit int) ([]BlockRef, bool, error) {
	if l, ok := api.(BlockLister); ok {
		return l.ListBlocks(ctx, afterIno, afterIndex, limit)
	}
	if limit <= 0 || limit > WalkPage {
		limit = WalkPage
	}
	var refs []BlockRef
	more := false
	err := api.WalkBlocks(ctx, func(ino Ino, idx uint64, h block.Hash) error {
		if ino < afterIno || ino == afterIno && idx <= afterIndex {
			return nil
		}
		if len(refs) == limit {
			more = true
			return errPageFull
		}
		refs = append(refs, BlockRef{Ino: ino, Index: idx, Hash: h})
		return nil
	})
	if err != nil && !errors.Is(err, errPageFull) {
		return nil, false, err
	}
	return refs, more, nil
}

// errPageFull stops ListBlocksOf's walk.
var errPageFull = errors.New("page full")

// Forward implements every optional interface but SessionBinder by
// passing the call to Next when Next has the capability (ErrNotSupported
// when not). A decorator that changes nothing in those calls embeds it.
type Forward struct{ Next API }

var (
	_ BlockLister     = Forward{}
	_ FilesetAPI      = Forward{}
	_ FilesetReadsAPI = Forward{}
	_ EvictAPI        = Forward{}
	_ VanishAPI       = Forward{}
	_ WritebackAPI    = Forward{}
	_ GatewaysAPI     = Forward{}
)

// ListBlocks implements BlockLister (ListBlocksOf).
func (f Forward) ListBlocks(ctx context.Context, afterIno Ino, afterIndex uint64, limit int) ([]BlockRef, bool, error) {
	return ListBlocksOf(ctx, f.Next, afterIno, afterIndex, limit)
}

// CreateFileset implements FilesetAPI.
func (f Forward) CreateFileset(ctx context.Context, fs Fileset) (Fileset, error) {
	c, err := capability[FilesetAPI](f.Next, "CreateFileset")
	if err != nil {
		return Fileset{}, err
	}
	return c.CreateFileset(ctx, fs)
}

// Fileset implements FilesetAPI.
func (f Forward) Fileset(ctx context.Context, root Ino) (Fileset, error) {
	c, err := capability[FilesetAPI](f.Next, "Fileset")
	if err != nil {
		return Fileset{}, err
	}
	return c.Fileset(ctx, root)
}

// Filesets implements FilesetAPI.
func (f Forward) Filesets(ctx context.Context) ([]Fileset, error) {
	c, err := capability[FilesetAPI](f.Next, "Filesets")
	if err != nil {
		return nil, err
	}
	return c.Filesets(ctx)
}

// DeleteFileset implements FilesetAPI.
func (f Forward) DeleteFileset(ctx context.Context, root Ino) error {
	c, err := capability[FilesetAPI](f.Next, "DeleteFileset")
	if err != nil {
		return err
	}
	return c.DeleteFileset(ctx, root)
}

// IngestDir implements FilesetAPI.
func (f Forward) IngestDir(ctx context.Context, req IngestDirReq) (Inode, error) {
	c, err := capability[FilesetAPI](f.Next, "IngestDir")
	if err != nil {
		return Inode{}, err
	}
	return c.IngestDir(ctx, req)
}

// SetGateway implements FilesetAPI.
func (f Forward) SetGateway(ctx context.Context, ino Ino, g GatewayInfo, ifChange uint64) (Inode, error) {
	c, err := capability[FilesetAPI](f.Next, "SetGateway")
	if err != nil {
		return Inode{}, err
	}
	return c.SetGateway(ctx, ino, g, ifChange)
}

// AddFilesetReads implements FilesetReadsAPI.
func (f Forward) AddFilesetReads(ctx context.Context, root Ino, d FilesetReads) error {
	c, err := capability[FilesetReadsAPI](f.Next, "AddFilesetReads")
	if err != nil {
		return err
	}
	return c.AddFilesetReads(ctx, root, d)
}

// EvictData implements EvictAPI.
func (f Forward) EvictData(ctx context.Context, ino Ino) (Inode, error) {
	c, err := capability[EvictAPI](f.Next, "EvictData")
	if err != nil {
		return Inode{}, err
	}
	return c.EvictData(ctx, ino)
}

// RemoveVanished implements VanishAPI.
func (f Forward) RemoveVanished(ctx context.Context, parent Ino, name string, ino Ino, isDir bool) error {
	c, err := capability[VanishAPI](f.Next, "RemoveVanished")
	if err != nil {
		return err
	}
	return c.RemoveVanished(ctx, parent, name, ino, isDir)
}

// ClaimWriteback implements WritebackAPI.
func (f Forward) ClaimWriteback(ctx context.Context, req ClaimReq) ([]WBOp, error) {
	c, err := capability[WritebackAPI](f.Next, "ClaimWriteback")
	if err != nil {
		return nil, err
	}
	return c.ClaimWriteback(ctx, req)
}

// WritebackDone implements WritebackAPI.
func (f Forward) WritebackDone(ctx context.Context, op WBOp, token string) error {
	c, err := capability[WritebackAPI](f.Next, "WritebackDone")
	if err != nil {
		return err
	}
	return c.WritebackDone(ctx, op, token)
}

// WritebackFailed implements WritebackAPI.
func (f Forward) WritebackFailed(ctx context.Context, op WBOp, cause string, permanent bool, retryAt time.Time) error {
	c, err := capability[WritebackAPI](f.Next, "WritebackFailed")
	if err != nil {
		return err
	}
	return c.WritebackFailed(ctx, op, cause, permanent, retryAt)
}

// WritebackToken implements WritebackAPI.
func (f Forward) WritebackToken(ctx context.Context, ino Ino) (string, error) {
	c, err := capability[WritebackAPI](f.Next, "WritebackToken")
	if err != nil {
		return "", err
	}
	return c.WritebackToken(ctx, ino)
}

// WritebackStats implements WritebackAPI.
func (f Forward) WritebackStats(ctx context.Context, root Ino) (WBStats, error) {
	c, err := capability[WritebackAPI](f.Next, "WritebackStats")
	if err != nil {
		return WBStats{}, err
	}
	return c.WritebackStats(ctx, root)
}

// RequestFlush implements WritebackAPI.
func (f Forward) RequestFlush(ctx context.Context, root Ino) error {
	c, err := capability[WritebackAPI](f.Next, "RequestFlush")
	if err != nil {
		return err
	}
	return c.RequestFlush(ctx, root)
}

// RegisterGateway implements GatewaysAPI.
func (f Forward) RegisterGateway(ctx context.Context, g GatewayNode) ([]GatewayNode, error) {
	c, err := capability[GatewaysAPI](f.Next, "RegisterGateway")
	if err != nil {
		return nil, err
	}
	return c.RegisterGateway(ctx, g)
}

// Gateways implements GatewaysAPI.
func (f Forward) Gateways(ctx context.Context) ([]GatewayNode, error) {
	c, err := capability[GatewaysAPI](f.Next, "Gateways")
	if err != nil {
		return nil, err
	}
	return c.Gateways(ctx)
}
