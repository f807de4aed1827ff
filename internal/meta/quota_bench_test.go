package meta

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"tessera/internal/kv"
	"tessera/internal/kv/memkv"
	"tessera/internal/kv/pebblekv"
)

// BenchmarkQuotaCreateStatRemove times the bench's metadata cycle (create,
// stat, unlink of an empty file) two directories deep, without a quota
// and with one on the top directory, side by side: what the quota hook
// costs a change.
func BenchmarkQuotaCreateStatRemove(b *testing.B) {
	stores := []struct {
		name string
		open func(b *testing.B) kv.Store
	}{
		{"memkv", func(*testing.B) kv.Store { return memkv.New() }},
		{"pebblekv", func(b *testing.B) kv.Store {
			s, err := pebblekv.Open(b.TempDir(), pebblekv.Options{PipelinedSync: true, WALSyncEvery: 100 * time.Millisecond}) // as the meta role (internal/up)
			if err != nil {
				b.Fatal(err)
			}
			return s
		}},
	}
	for _, st := range stores {
		for _, quota := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/quota=%v", st.name, quota), func(b *testing.B) {
				ctx := context.Background()
				store := st.open(b)
				b.Cleanup(func() { store.Close() })
				s, err := New(store, Options{})
				if err != nil {
					b.Fatal(err)
				}
				top, err := s.Create(ctx, CreateReq{Parent: RootIno, Name: "top", Mode: syscall.S_IFDIR | 0o755})
				if err != nil {
					b.Fatal(err)
				}
				dir, err := s.Create(ctx, CreateReq{Parent: top.Ino, Name: "dir", Mode: syscall.S_IFDIR | 0o755})
				if err != nil {
					b.Fatal(err)
				}
				if quota {
					if _, err := s.SetQuota(ctx, Quota{Dir: top.Ino, MaxInodes: 1 << 40, MaxBytes: 1 << 50}); err != nil {
						b.Fatal(err)
					}
				}
				b.ResetTimer()
				for i := range b.N {
					name := fmt.Sprintf("f%d", i)
					in, err := s.Create(ctx, CreateReq{Parent: dir.Ino, Name: name, Mode: syscall.S_IFREG | 0o644, Excl: true})
					if err != nil {
						b.Fatal(err)
					}
					if _, err := s.GetAttr(ctx, in.Ino); err != nil {
						b.Fatal(err)
					}
					if _, err := s.Unlink(ctx, dir.Ino, name, in.Ino); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
