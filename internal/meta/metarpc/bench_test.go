package metarpc_test

import (
	"context"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"

	"tessera/internal/kv/boltkv"
	"tessera/internal/meta"
	"tessera/internal/meta/metatest"
)

// boltClient serves a Service over a fresh boltkv file and dials it.
func boltClient(b *testing.B) meta.API {
	store, err := boltkv.Open(filepath.Join(b.TempDir(), "meta.db"), boltkv.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { store.Close() })
	s, err := meta.New(store, meta.Options{})
	if err != nil {
		b.Fatal(err)
	}
	return dial(b, serve(b, s))
}

// BenchmarkRPCCreate creates files in one directory through the RPC client.
func BenchmarkRPCCreate(b *testing.B) { metatest.BenchCreate(b, boltClient(b)) }

// BenchmarkRPCLookupGetAttr looks up and stats through the RPC client.
func BenchmarkRPCLookupGetAttr(b *testing.B) { metatest.BenchLookupGetAttr(b, boltClient(b)) }

// BenchmarkRPCGetAttrParallel stats from concurrent goroutines, spreading
// over the connection pool.
func BenchmarkRPCGetAttrParallel(b *testing.B) {
	api := boltClient(b)
	ctx := context.Background()
	f, err := api.Create(ctx, meta.CreateReq{Parent: meta.RootIno, Name: "f", Mode: syscall.S_IFREG | 0644})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := api.GetAttr(ctx, f.Ino); err != nil {
				panic(fmt.Sprint(err))
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}
