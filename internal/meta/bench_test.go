package meta_test

import (
	"path/filepath"
	"testing"

	"tessera/internal/kv"
	"tessera/internal/kv/memkv"
	"tessera/internal/meta"
	"tessera/internal/meta/metatest"
)

// engines are the stores the benchmarks run on.
var engines = []struct {
	name string
	open func(b *testing.B) kv.Store
}{
	{"memkv", func(b *testing.B) kv.Store { return memkv.New() }},
	{"boltkv", func(b *testing.B) kv.Store { return openBolt(b, filepath.Join(b.TempDir(), "meta.db")) }},
}

func benchService(b *testing.B, open func(b *testing.B) kv.Store) *meta.Service {
	store := open(b)
	b.Cleanup(func() { store.Close() })
	s, err := meta.New(store, meta.Options{})
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkCreate creates files in one directory.
func BenchmarkCreate(b *testing.B) {
	for _, e := range engines {
		b.Run(e.name, func(b *testing.B) { metatest.BenchCreate(b, benchService(b, e.open)) })
	}
}

// BenchmarkLookupGetAttr looks a name up in a 1000-entry directory and
// stats the inode.
func BenchmarkLookupGetAttr(b *testing.B) {
	for _, e := range engines {
		b.Run(e.name, func(b *testing.B) { metatest.BenchLookupGetAttr(b, benchService(b, e.open)) })
	}
}
