package etcdkv_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"tessera/internal/kv"
	"tessera/internal/kv/etcdkv"
	"tessera/internal/kv/etcdkv/etcdtest"
	"tessera/internal/kv/kvtest"
)

func open(t *testing.T, c *etcdtest.Cluster, o etcdkv.Options) *etcdkv.Store {
	t.Helper()
	o.Endpoints = c.Endpoints()
	if o.Prefix == "" {
		o.Prefix = "/" + strings.ReplaceAll(t.Name(), "/", "_")
	}
	s, err := etcdkv.Open(context.Background(), o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func putN(tx kv.Txn, n int, size int) error {
	for i := range n {
		if err := tx.Put(fmt.Appendf(nil, "k%06d", i), bytes.Repeat([]byte{'v'}, size)); err != nil {
			return err
		}
	}
	return nil
}

// TestLimits: a transaction over the limits fails before it is sent, with
// an error naming the limit and the size, and writes nothing; the limits
// the scripts start etcd with let a transaction of thousands of writes
// through (etcd's own default, 128, would refuse it).
func TestLimits(t *testing.T) {
	c := etcdtest.Start(t, 1)
	ctx := context.Background()

	small := open(t, c, etcdkv.Options{MaxTxnOps: 10, MaxRequestBytes: 4096})
	err := small.Update(ctx, func(tx kv.Txn) error { return putN(tx, 11, 1) })
	if !errors.Is(err, etcdkv.ErrTooLarge) || !strings.Contains(err.Error(), "--max-txn-ops 10") || !strings.Contains(err.Error(), "11 writes") {
		t.Fatalf("11 writes with --max-txn-ops 10: %v", err)
	}
	err = small.Update(ctx, func(tx kv.Txn) error { return putN(tx, 1, 5000) })
	if !errors.Is(err, etcdkv.ErrTooLarge) || !strings.Contains(err.Error(), "--max-request-bytes 4096") {
		t.Fatalf("a 5000-byte value with --max-request-bytes 4096: %v", err)
	}
	err = small.View(ctx, func(tx kv.Txn) error {
		return tx.Scan(nil, nil, func(k, _ []byte) (bool, error) {
			return false, fmt.Errorf("key %q of a refused transaction was written", k)
		})
	})
	if err != nil {
		t.Fatal(err)
	}

	big := open(t, c, etcdkv.Options{Prefix: "/big"})
	const n = 5000
	if err := big.Update(ctx, func(tx kv.Txn) error { return putN(tx, n, 100) }); err != nil {
		t.Fatalf("%d writes in one Update under the scripts' etcd flags: %v", n, err)
	}
	count := 0
	if err := big.View(ctx, func(tx kv.Txn) error {
		return tx.Scan(nil, nil, func(_, _ []byte) (bool, error) { count++; return true, nil })
	}); err != nil {
		t.Fatal(err)
	}
	if count != n {
		t.Fatalf("scan found %d keys, want %d", count, n)
	}
}

// TestConformanceSmallPages runs the suite with three keys per scan
// request, so that every scan crosses pages (also while it writes).
func TestConformanceSmallPages(t *testing.T) {
	c := etcdtest.Start(t, 1)
	n := 0
	kvtest.Run(t, func(t *testing.T, dir string) kv.Store {
		n++
		s, err := etcdkv.Open(context.Background(), etcdkv.Options{
			Endpoints: c.Endpoints(), Prefix: fmt.Sprintf("/p%d", n), ScanPage: 3,
		})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// TestPrefixesAreSeparate: stores with different prefixes on one cluster do
// not see each other's keys, and a serializable View reads them too.
func TestPrefixesAreSeparate(t *testing.T) {
	c := etcdtest.Start(t, 1)
	ctx := context.Background()
	a := open(t, c, etcdkv.Options{Prefix: "/a"})
	b := open(t, c, etcdkv.Options{Prefix: "/ab"})
	if err := a.Update(ctx, func(tx kv.Txn) error { return tx.Put([]byte("x"), []byte("1")) }); err != nil {
		t.Fatal(err)
	}
	err := b.View(kv.WithConsistency(ctx, kv.Serializable), func(tx kv.Txn) error {
		return tx.Scan(nil, nil, func(k, _ []byte) (bool, error) {
			return false, fmt.Errorf("prefix /ab sees key %q of prefix /a", k)
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	err = a.View(kv.WithConsistency(ctx, kv.Serializable), func(tx kv.Txn) error {
		v, ok, err := tx.Get([]byte("x"))
		if err == nil && (!ok || string(v) != "1") {
			err = fmt.Errorf("serializable Get x = %q, %v; want 1", v, ok)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestWatchCompacted: a watch from a compacted revision closes its channel
// at once: the caller must resync.
func TestWatchCompacted(t *testing.T) {
	c := etcdtest.Start(t, 1)
	ctx := context.Background()
	s := open(t, c, etcdkv.Options{})
	for i := range 3 {
		if err := s.Update(ctx, func(tx kv.Txn) error { return tx.Put([]byte("w"), fmt.Appendf(nil, "%d", i)) }); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := s.Client().Get(ctx, "anything")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Client().Compact(ctx, resp.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
		t.Fatal(err)
	}
	ch, err := s.Watch(ctx, []byte("w"), 1)
	if err != nil {
		t.Fatal(err)
	}
	for b := range ch {
		t.Fatalf("a watch from a compacted revision delivered %v", b)
	}
}

// TestMembers: every member reports, one leads; a killed one reports why
// it is unhealthy while the others answer.
func TestMembers(t *testing.T) {
	c := etcdtest.Start(t, 3)
	ctx := context.Background()
	s := open(t, c, etcdkv.Options{})
	ms, err := s.Members(ctx)
	if err != nil {
		t.Fatal(err)
	}
	leaders := 0
	for _, m := range ms {
		if !m.Healthy || m.Rev <= 0 {
			t.Errorf("member %+v not healthy", m)
		}
		if m.Leader {
			leaders++
		}
	}
	if len(ms) != 3 || leaders != 1 {
		t.Fatalf("members %+v: want 3, one leader", ms)
	}
	c.Kill(2)
	c.WaitReady()
	ms, err = s.Members(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		dead := m.Addr == c.Members[2].ClientURL
		if dead == m.Healthy || (dead && m.Err == "") {
			t.Errorf("after killing %s: member %+v", c.Members[2].Name, m)
		}
	}
}
