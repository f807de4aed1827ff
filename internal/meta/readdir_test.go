package meta

import (
	"context"
	"fmt"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"tessera/internal/kv"
	"tessera/internal/kv/memkv"
)

// TestReadDirLarge pages through a 100,000-entry directory: every page is a
// key-range scan from the cursor, so a page deep in the directory costs what
// the first one does. The cost is counted in keys the store's scans visit,
// not in time (a 1 s bound per page failed on a busy machine).
func TestReadDirLarge(t *testing.T) {
	n := 100_000
	ctx := context.Background()
	inner := memkv.New()
	defer inner.Close()
	store := &scanCounter{Store: inner}
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
	var most int64
	for {
		v0 := store.visited.Load()
		ents, more, err := s.ReadDir(ctx, d.Ino, after, 1000, true)
		if err != nil {
			t.Fatal(err)
		}
		most = max(most, store.visited.Load()-v0)
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
	t.Logf("%d entries in %d plus pages: %v, at most %d keys scanned for a page", n, pages, time.Since(start), most)
	if most > 2*1000+16 {
		t.Fatalf("a page of 1000 entries scanned %d keys: want a scan from the cursor, not from the directory's start", most)
	}
}

// scanCounter counts the keys its transactions' scans visit.
type scanCounter struct {
	kv.Store
	visited atomic.Int64
}

func (c *scanCounter) View(ctx context.Context, fn func(kv.Txn) error) error {
	return c.Store.View(ctx, func(tx kv.Txn) error { return fn(countingTxn{tx, &c.visited}) })
}

func (c *scanCounter) Update(ctx context.Context, fn func(kv.Txn) error) error {
	return c.Store.Update(ctx, func(tx kv.Txn) error { return fn(countingTxn{tx, &c.visited}) })
}

type countingTxn struct {
	kv.Txn
	n *atomic.Int64
}

func (t countingTxn) Scan(start, end []byte, fn func(k, v []byte) (bool, error)) error {
	return t.Txn.Scan(start, end, func(k, v []byte) (bool, error) {
		t.n.Add(1)
		return fn(k, v)
	})
}
