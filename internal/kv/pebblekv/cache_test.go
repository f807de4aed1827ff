package pebblekv_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"tessera/internal/kv"
	"tessera/internal/kv/kvtest"
	"tessera/internal/kv/pebblekv"
)

// TestCacheBytes: a store whose tables are larger than Pebble's default
// block cache (8 MiB) but smaller than Options.CacheBytes reads all of
// them a second time from the cache; with the default it reads blocks
// from the tables again. Conformance holds with the option set.
func TestCacheBytes(t *testing.T) {
	const values, size = 2000, 8 << 10 // 16 MB, incompressible
	misses := func(opts pebblekv.Options) int64 {
		ctx := context.Background()
		dir := t.TempDir()
		s, err := pebblekv.Open(dir, opts)
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(1, 2))
		for i := 0; i < values; i += 100 {
			err := s.Update(ctx, func(tx kv.Txn) error {
				for j := i; j < i+100; j++ {
					v := make([]byte, size)
					for k := range v {
						v[k] = byte(r.Uint32())
					}
					if err := tx.Put(fmt.Appendf(nil, "k%06d", j), v); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		// Reopened, the data is in tables, not in the memtable.
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if s, err = pebblekv.Open(dir, opts); err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		readAll := func() {
			err := s.View(ctx, func(tx kv.Txn) error {
				for j := range values {
					if _, ok, err := tx.Get(fmt.Appendf(nil, "k%06d", j)); err != nil || !ok {
						return fmt.Errorf("k%06d: found %v, %v", j, ok, err)
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		readAll()
		_, _, m0 := s.CacheStats()
		readAll()
		bytes, _, m1 := s.CacheStats()
		t.Logf("CacheBytes %d: %d bytes cached, %d misses on the second read", opts.CacheBytes, bytes, m1-m0)
		return m1 - m0
	}
	if m := misses(pebblekv.Options{}); m < values/4 {
		t.Fatalf("default cache: %d misses of %d reads of 16 MB: the data is not in tables, the test tests nothing", m, values)
	}
	if m := misses(pebblekv.Options{CacheBytes: 64 << 20}); m > values/100 {
		t.Fatalf("a 64 MiB cache missed %d of %d reads of 16 MB read before", m, values)
	}
}

func TestConformanceCacheBytes(t *testing.T) {
	kvtest.RunDurable(t, opener(pebblekv.Options{PipelinedSync: true, CacheBytes: 32 << 20}))
}
