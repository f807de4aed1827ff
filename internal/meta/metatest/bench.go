package metatest

import (
	"context"
	"fmt"
	"syscall"
	"testing"

	"tessera/internal/meta"
)

// BenchCreate is the Create benchmark body for any API.
func BenchCreate(b *testing.B, api meta.API) {
	ctx := context.Background()
	d, err := api.Create(ctx, meta.CreateReq{Parent: meta.RootIno, Name: "d", Mode: syscall.S_IFDIR | 0755})
	if err != nil {
		b.Fatal(err)
	}
	i := 0
	for b.Loop() {
		if _, err := api.Create(ctx, meta.CreateReq{Parent: d.Ino, Name: fmt.Sprint("f", i), Mode: syscall.S_IFREG | 0644}); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}

// BenchLookupGetAttr is the Lookup+GetAttr benchmark body for any API.
func BenchLookupGetAttr(b *testing.B, api meta.API) {
	ctx := context.Background()
	d, err := api.Create(ctx, meta.CreateReq{Parent: meta.RootIno, Name: "d", Mode: syscall.S_IFDIR | 0755})
	if err != nil {
		b.Fatal(err)
	}
	const n = 1000
	for i := range n {
		if _, err := api.Create(ctx, meta.CreateReq{Parent: d.Ino, Name: fmt.Sprint("f", i), Mode: syscall.S_IFREG | 0644}); err != nil {
			b.Fatal(err)
		}
	}
	i := 0
	for b.Loop() {
		in, err := api.Lookup(ctx, d.Ino, fmt.Sprint("f", i%n))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := api.GetAttr(ctx, in.Ino); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}
