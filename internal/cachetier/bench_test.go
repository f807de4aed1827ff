package cachetier

import (
	"context"
	"net/http/httptest"
	"testing"

	"tessera/internal/block"
	"tessera/internal/block/blocktest"
	"tessera/internal/block/client"
	"tessera/internal/block/disk"
	blockserver "tessera/internal/block/server"
)

// BenchmarkGet compares a Get served by the tier (one memcached on
// loopback, verified) with one served by a disk store directly (page cache
// warm) and by a block server over HTTP on loopback (what the tier saves
// a client in a real deployment).
//
//	go test -run '^$' -bench Get -benchtime 2s ./internal/cachetier
func BenchmarkGet(b *testing.B) {
	srvs := startServers(b, 1)
	p := newPool(b, srvs, Options{})
	ds, err := disk.Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ds.Close() })
	hs := httptest.NewServer(blockserver.New(ds, blockserver.Options{}))
	b.Cleanup(hs.Close)
	remote := client.New(hs.URL, client.Options{})
	c := newCache(b, p, ds)
	ctx := context.Background()

	for _, sz := range []struct {
		name string
		n    int
	}{{"4KiB", 4 << 10}, {"64KiB", 64 << 10}, {"1MiB", 1 << 20}, {"4MiB", 4 << 20}} {
		d := blocktest.Data(uint64(sz.n), sz.n)
		h := block.Sum(d)
		if err := ds.Put(ctx, h, d); err != nil {
			b.Fatal(err)
		}
		if err := p.SetBlock(ctx, h, d); err != nil {
			b.Fatal(err)
		}
		for _, st := range []struct {
			name string
			s    block.Store
		}{{"tier", c}, {"disk", ds}, {"blockd", remote}} {
			b.Run(st.name+"/"+sz.name, func(b *testing.B) {
				b.SetBytes(int64(sz.n))
				for b.Loop() {
					if _, err := st.s.Get(ctx, h); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
	if st := c.Stats(); st.Misses != 0 {
		b.Fatalf("tier missed: %+v", st)
	}
}
