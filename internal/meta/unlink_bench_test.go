package meta

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"tessera/internal/kv/pebblekv"
)

// BenchmarkCreateThenUnlink times the NFS bench's remove phase on the
// meta role's store: b.N empty files are created in one directory (not
// timed), then unlinked with the reap hint a client sends (timed), and,
// for comparison, the create phase alone.
func BenchmarkCreateThenUnlink(b *testing.B) {
	for _, phase := range []string{"create", "unlink"} {
		b.Run(phase, func(b *testing.B) {
			ctx := context.Background()
			store, err := pebblekv.Open(b.TempDir(), pebblekv.Options{PipelinedSync: true, WALSyncEvery: 100 * time.Millisecond}) // as the meta role (internal/up)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { store.Close() })
			s, err := New(store, Options{})
			if err != nil {
				b.Fatal(err)
			}
			dir, err := s.Create(ctx, CreateReq{Parent: RootIno, Name: "d", Mode: syscall.S_IFDIR | 0o755})
			if err != nil {
				b.Fatal(err)
			}
			inos := make([]Ino, b.N)
			if phase == "create" {
				b.ResetTimer()
			}
			for i := range b.N {
				in, err := s.Create(ctx, CreateReq{Parent: dir.Ino, Name: fmt.Sprintf("f%d", i), Mode: syscall.S_IFREG | 0o644, Excl: true})
				if err != nil {
					b.Fatal(err)
				}
				inos[i] = in.Ino
			}
			if phase == "create" {
				return
			}
			b.ResetTimer()
			for i := range b.N {
				if _, err := s.Unlink(ctx, dir.Ino, fmt.Sprintf("f%d", i), inos[i]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
