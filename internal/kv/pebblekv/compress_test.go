package pebblekv_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"tessera/internal/kv"
	"tessera/internal/kv/pebblekv"
)

// TestTablesUncompressed: the tables hold blocks as written, uncompressed
// (a block the cache misses is not decoded; issue 28): 4 MB of highly
// compressible values take at least 4 MB of tables once reopened, where
// snappy made them a few hundred KB.
func TestTablesUncompressed(t *testing.T) {
	const values, size = 1000, 4 << 10
	ctx := context.Background()
	dir := t.TempDir()
	s, err := pebblekv.Open(dir, pebblekv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	v := bytes.Repeat([]byte("tessera "), size/8)
	for i := 0; i < values; i += 100 {
		err := s.Update(ctx, func(tx kv.Txn) error {
			for j := i; j < i+100; j++ {
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
	if s, err = pebblekv.Open(dir, pebblekv.Options{}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tables, err := filepath.Glob(filepath.Join(dir, "*.sst"))
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, p := range tables {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		total += fi.Size()
	}
	if total < values*size {
		t.Fatalf("%d tables of %d bytes for %d bytes of values: compressed", len(tables), total, values*size)
	}
	err = s.View(ctx, func(tx kv.Txn) error {
		got, ok, err := tx.Get([]byte("k000999"))
		if err == nil && (!ok || !bytes.Equal(got, v)) {
			err = fmt.Errorf("k000999: found %v, %d bytes", ok, len(got))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
