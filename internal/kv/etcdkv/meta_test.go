package etcdkv_test

import (
	"context"
	"fmt"
	"testing"

	"tessera/internal/kv/etcdkv"
	"tessera/internal/kv/etcdkv/etcdtest"
	"tessera/internal/meta"
	"tessera/internal/meta/metatest"
)

// TestMetaConformance runs the meta service's conformance suite and its
// model-based random test over etcdkv on a real etcd member: the meta
// layer's transactions, as they are, fit etcd's mapping and limits.
func TestMetaConformance(t *testing.T) {
	c := etcdtest.Start(t, 1)
	n := 0
	factory := func(t *testing.T, opts meta.Options) meta.API {
		n++
		s, err := etcdkv.Open(context.Background(), etcdkv.Options{Endpoints: c.Endpoints(), Prefix: fmt.Sprintf("/meta%d", n)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		svc, err := meta.New(s, opts)
		if err != nil {
			t.Fatal(err)
		}
		return svc
	}
	metatest.Run(t, factory)
	t.Run("Model", func(t *testing.T) { metatest.RunModel(t, factory, 1, 300) })
}
