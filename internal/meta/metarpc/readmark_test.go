package metarpc_test

import (
	"context"
	"sync/atomic"
	"testing"

	"tessera/internal/kv/memkv"
	"tessera/internal/meta"
)

// markAPI records whether the last GetAttr was allowed serializable reads.
type markAPI struct {
	meta.API
	allowed atomic.Bool
}

func (a *markAPI) GetAttr(ctx context.Context, ino meta.Ino) (meta.Inode, error) {
	a.allowed.Store(meta.SerializableAllowed(ctx))
	return a.API.GetAttr(ctx, ino)
}

// TestSerializableMarkTravels: meta.AllowSerializable on the client's
// context reaches the served API's context; without it, it does not.
func TestSerializableMarkTravels(t *testing.T) {
	svc, err := meta.New(memkv.New(), meta.Options{})
	if err != nil {
		t.Fatal(err)
	}
	api := &markAPI{API: svc}
	c := dial(t, serve(t, api))
	ctx := context.Background()
	for _, allow := range []bool{true, false, true} {
		cctx := ctx
		if allow {
			cctx = meta.AllowSerializable(ctx)
		}
		if _, err := c.GetAttr(cctx, meta.RootIno); err != nil {
			t.Fatal(err)
		}
		if got := api.allowed.Load(); got != allow {
			t.Fatalf("served call allowed serializable = %v, want %v", got, allow)
		}
	}
}
