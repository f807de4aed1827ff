package meta_test

import (
	"testing"

	"tessera/internal/kv/memkv"
	"tessera/internal/meta"
	"tessera/internal/meta/metatest"
)

// memService is the metatest factory over a fresh memkv store.
func memService(t *testing.T, opts meta.Options) meta.API {
	store := memkv.New()
	t.Cleanup(func() { store.Close() })
	s, err := meta.New(store, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) {
	metatest.Run(t, memService)
}

func TestFilesets(t *testing.T) {
	metatest.RunFilesets(t, memService)
}
