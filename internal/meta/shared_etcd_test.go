package meta_test

import (
	"context"
	"fmt"
	"testing"

	"tessera/internal/kv"
	"tessera/internal/kv/etcdkv"
	"tessera/internal/kv/etcdkv/etcdtest"
	"tessera/internal/meta"
	"tessera/internal/meta/metatest"
)

// TestSharedOverEtcd runs the shared-store scenarios over a real etcd
// member, each Service with a client connection of its own (as separate
// meta processes have): etcd's watches carry the callback requests.
func TestSharedOverEtcd(t *testing.T) {
	c := etcdtest.Start(t, 1)
	n := 0
	open := func(t *testing.T) func() kv.Store {
		n++
		prefix := fmt.Sprintf("/shared%d", n)
		return func() kv.Store {
			s, err := etcdkv.Open(context.Background(), etcdkv.Options{Endpoints: c.Endpoints(), Prefix: prefix})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}
	}
	services := func(t *testing.T, opts meta.Options, k int) []*meta.Service {
		conn := open(t)
		var out []*meta.Service
		for range k {
			out = append(out, sharedServices(t, conn(), opts, 1, true)[0])
		}
		return out
	}
	t.Run("CallbackCrosses", func(t *testing.T) {
		svcs := services(t, meta.Options{}, 2)
		callbackCrosses(t, svcs[0], svcs[1])
	})
	t.Run("SyncCrosses", func(t *testing.T) {
		svcs := services(t, meta.Options{}, 3)
		syncCrosses(t, svcs[0], svcs[1], svcs[2])
	})
	t.Run("Conformance", func(t *testing.T) {
		metatest.Run(t, func(t *testing.T, opts meta.Options) meta.API { return services(t, opts, 2)[0] })
	})
}
