package meta

import (
	"context"
	"errors"
	"fmt"
	"reflect"

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
// Its methods are generated (zz_forward_gen.go) but ListBlocks, which
// falls back to a walk.
type Forward struct{ Next API }

//go:generate go run tessera/internal/meta/wrapgen -type Forward -recv f -ifaces optional -style forward -o zz_forward_gen.go

// ListBlocks implements BlockLister (ListBlocksOf).
func (f Forward) ListBlocks(ctx context.Context, afterIno Ino, afterIndex uint64, limit int) ([]BlockRef, bool, error) {
	return ListBlocksOf(ctx, f.Next, afterIno, afterIndex, limit)
}
