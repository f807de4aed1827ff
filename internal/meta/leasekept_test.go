package meta_test

import (
	"context"
	"encoding/binary"
	"sync/atomic"
	"testing"

	"tessera/internal/kv"
	"tessera/internal/kv/memkv"
	"tessera/internal/meta"
	"tessera/internal/meta/metatest"
)

// leasePuts is a memkv store that counts the lease records ("L" keys)
// its transactions write.
type leasePuts struct {
	*memkv.Store
	n *atomic.Int64
}

func (s leasePuts) Update(ctx context.Context, fn func(tx kv.Txn) error) error {
	return s.Store.Update(ctx, func(tx kv.Txn) error { return fn(leasePutTxn{tx, s.n}) })
}

type leasePutTxn struct {
	kv.Txn
	n *atomic.Int64
}

func (t leasePutTxn) Put(k, v []byte) error {
	if len(k) > 0 && k[0] == 'L' {
		t.n.Add(1)
	}
	return t.Txn.Put(k, v)
}

// TestLeaseRecordKeptAfterCallback: a Service whose session was called
// back about a change made through another keeps its lease record of the
// inode, so the session's next read (a reader at one site of a file just
// written at another) writes nothing to the store before it is served; the
// record still brings the next change's callback, and the tidying round
// drops it once no session leases the inode.
func TestLeaseRecordKeptAfterCallback(t *testing.T) {
	ctx := context.Background()
	clock := metatest.NewClock()
	var puts atomic.Int64
	store := leasePuts{memkv.New(), &puts}
	svcs := sharedServices(t, store, meta.Options{Now: clock.Now, After: clock.After}, 2, true)
	a, b := svcs[0], svcs[1]
	f := mkfile(t, a, "f")
	keys := func(prefix []byte) int {
		n := 0
		err := store.View(ctx, func(tx kv.Txn) error {
			return tx.Scan(prefix, kv.PrefixEnd(prefix), func(k, v []byte) (bool, error) {
				n++
				return true, nil
			})
		})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	bRecord := append(binary.BigEndian.AppendUint64([]byte{'L'}, uint64(f.Ino)), binary.BigEndian.AppendUint64(nil, uint64(b.ID()))...)
	sb, err := b.OpenSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	bb := b.WithSession(sb.ID)
	// Both Services wait on the clock: no tidying round runs until the
	// test advances it.
	waitFor(t, "both Services wait on the clock", func() bool { return clock.Waiters() >= 2 })
	called := func() {
		t.Helper()
		cb := awaitCallback(t, b, sb.ID, f.Ino)
		if _, err := b.Callbacks(ctx, sb.ID, cb.Seq, 0); err != nil { // acknowledge it
			t.Fatal(err)
		}
		waitFor(t, "b deletes the callback request", func() bool { return keys([]byte{'C'}) == 0 })
	}
	for _, lag := range []bool{false, true} {
		rctx := ctx
		if lag {
			rctx = meta.AllowSerializable(ctx)
		}
		if _, err := bb.GetAttr(rctx, f.Ino); err != nil {
			t.Fatal(err)
		}
		if keys(bRecord) != 1 {
			t.Fatal("no lease record of b after its session read f")
		}
		if _, err := a.SetAttr(ctx, f.Ino, meta.SetAttrReq{Valid: meta.SetMode, Mode: 0o600}); err != nil {
			t.Fatal(err)
		}
		called()
		if keys(bRecord) != 1 {
			t.Fatal("b dropped its lease record of f with the callback request")
		}
		before := puts.Load()
		if _, err := bb.GetAttr(rctx, f.Ino); err != nil {
			t.Fatal(err)
		}
		if n := puts.Load() - before; n != 0 {
			t.Fatalf("the read after the callback wrote %d lease records, want none (the record is kept)", n)
		}
		// The kept record still calls the next change back.
		if _, err := a.SetAttr(ctx, f.Ino, meta.SetAttrReq{Valid: meta.SetMode, Mode: 0o640}); err != nil {
			t.Fatal(err)
		}
		called()
	}
	// No session leases f now: the rounds drop the record.
	tidyUntil(t, clock, "b drops the unheld record", func() bool { return keys(bRecord) == 0 })
}
