package meta

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"tessera/internal/kv/memkv"
)

// TestReadDirLarge pages through a 100,000-entry directory: every page is a
// key-range scan from the cursor, so a page deep in the directory costs what
// the first one does.
func TestReadDirLarge(t *testing.T) {
	n := 100_000
	ctx := context.Background()
	store := memkv.New()
	defer store.Close()
	s, err := New(store, Options{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := s.Create(ctx, CreateReq{Parent: RootIno, Name: "big", Mode: syscall.S_IFDIR | 0755})
	if err != nil {
		t.Fatal(err)
	}
	// Bulk-load the entries in a few transactions; Create is tested elsewhere.
	for lo := 0; lo < n; lo += 10_000 {
		err := s.update(ctx, func(t txn) error {
			for i := lo; i < min(lo+10_000, n); i++ {
				rec := &inodeRec{}
				rec.Attr = Attr{Ino: Ino(1000 + i), Gen: 1, Mode: syscall.S_IFREG | 0644, Nlink: 1, BlockSize: 4096}
				if err := t.putInode(rec); err != nil {
					return err
				}
				if err := t.putDentry(d.Ino, fmt.Sprintf("f%07d", i), rec.Ino, rec.Mode); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	after, total, pages := "", 0, 0
	var slowest time.Duration
	for {
		t0 := time.Now()
		ents, more, err := s.ReadDir(ctx, d.Ino, after, 1000, true)
		if err != nil {
			t.Fatal(err)
		}
		slowest = max(slowest, time.Since(t0))
		for _, e := range ents {
			if want := fmt.Sprintf("f%07d", total); e.Name != want {
				t.Fatalf("entry %d is %q, want %q", total, e.Name, want)
			}
			total++
		}
		pages++
		if !more {
			break
		}
		after = ents[len(ents)-1].Name
	}
	if total != n {
		t.Fatalf("listed %d entries, want %d", total, n)
	}
	t.Logf("%d entries in %d plus pages: %v, slowest page %v", n, pages, time.Since(start), slowest)
	if slowest > time.Second {
		t.Fatalf("a page of 1000 took %v", slowest)
	}
}
