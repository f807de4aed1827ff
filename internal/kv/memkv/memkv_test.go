package memkv_test

import (
	"context"
	"fmt"
	"testing"

	"tessera/internal/kv"
	"tessera/internal/kv/kvtest"
	"tessera/internal/kv/memkv"
)

func TestConformance(t *testing.T) {
	kvtest.Run(t, func(t *testing.T, dir string) kv.Store { return memkv.New() })
}

// fill returns a store holding n keys "k%08d".
func fill(tb testing.TB, n int) *memkv.Store {
	s := memkv.New()
	err := s.Update(context.Background(), func(tx kv.Txn) error {
		for i := range n {
			if err := tx.Put(fmt.Appendf(nil, "k%08d", i), []byte("v")); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// TestScan100k checks that short scans in a large store visit only their range.
func TestScan100k(t *testing.T) {
	const n = 100_000
	s := fill(t, n)
	err := s.View(context.Background(), func(tx kv.Txn) error {
		for i := 0; i < n; i += n / 1000 {
			var got int
			err := tx.Scan(fmt.Appendf(nil, "k%08d", i), fmt.Appendf(nil, "k%08d", i+10), func(k, v []byte) (bool, error) {
				got++
				return true, nil
			})
			if err != nil {
				return err
			}
			if want := min(10, n-i); got != want {
				return fmt.Errorf("scan from %d saw %d keys, want %d", i, got, want)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func BenchmarkScan10Of100k(b *testing.B) {
	s := fill(b, 100_000)
	ctx := context.Background()
	i := 0
	for b.Loop() {
		start := fmt.Appendf(nil, "k%08d", i%100_000)
		i += 7919
		err := s.View(ctx, func(tx kv.Txn) error {
			n := 0
			return tx.Scan(start, nil, func(k, v []byte) (bool, error) {
				n++
				return n < 10, nil
			})
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}
