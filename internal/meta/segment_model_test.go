package meta_test

import (
	"testing"

	"tessera/internal/kv/memkv"
	"tessera/internal/meta"
	"tessera/internal/meta/metatest"
)

// TestModelSmallBound is the model-based random test on a store that
// refuses transactions of more than meta.MinTxnOps operations, with the
// Service bounded the same: every operation of the model (whose files have
// at most 6 blocks, too few to need segments: segment_test.go covers
// those) fits the least bound MinTxnOps allows, and every reference count
// and the namespace still match the model after each step.
func TestModelSmallBound(t *testing.T) {
	metatest.RunModel(t, func(t *testing.T, o meta.Options) meta.API {
		inner := memkv.New()
		t.Cleanup(func() { inner.Close() })
		o.MaxTxnOps = meta.MinTxnOps
		s, err := meta.New(meta.NewBoundStore(inner, meta.MinTxnOps), o)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}, modelSeed(t), min(*stepsFlag, 500))
}
