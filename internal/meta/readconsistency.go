package meta

import (
	"context"

	"tessera/internal/kv"
)

// Read consistency (issue 13). A read-only call made under a policy that
// tolerates lag (policy.Knobs.SerializableFor: session, nfs, relaxed) may
// carry a "serializable ok" mark; the Service then reads its store at
// kv.Serializable, which a replicated engine answers from its nearest
// replica (for etcd, the site's own member) without a round trip to the
// leader. Every other call, and every update, reads Linearizable. Over the
// meta protocol the mark travels as the call's metadata "tessera-read:
// serializable" (internal/meta/metarpc).

type serializableKey struct{}

// AllowSerializable returns a context whose read-only meta calls may be
// served by a serializable read.
func AllowSerializable(ctx context.Context) context.Context {
	return context.WithValue(ctx, serializableKey{}, true)
}

// SerializableAllowed reports whether ctx carries AllowSerializable's mark.
func SerializableAllowed(ctx context.Context) bool {
	ok, _ := ctx.Value(serializableKey{}).(bool)
	return ok
}

// readContext is ctx as a view of the store reads it: at kv.Serializable
// when the caller allowed it.
func readContext(ctx context.Context) context.Context {
	if SerializableAllowed(ctx) {
		return kv.WithConsistency(ctx, kv.Serializable)
	}
	return ctx
}
