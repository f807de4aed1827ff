package etcdkv_test

import (
	"context"
	"errors"
	"testing"

	"tessera/internal/kv"
	"tessera/internal/kv/etcdkv"
	"tessera/internal/kv/etcdkv/etcdtest"
)

// TestReadCacheSavesReads: what a store last committed or read is read
// again by an Update without a round trip; the commit is its only
// request (issue 29). Without the read cache the Update sends its reads
// first (a Prefetch's Txn, a Get).
func TestReadCacheSavesReads(t *testing.T) {
	c := etcdtest.Start(t, 1)
	s := open(t, c, etcdkv.Options{})
	bg := context.Background()
	put(t, s, "dir", "1")
	if err := s.View(bg, func(tx kv.Txn) error { _, _, err := tx.Get([]byte("name")); return err }); err != nil {
		t.Fatal(err) // a lookup: the name is absent
	}
	hooks := []kv.Range{{Start: []byte("q/"), End: kv.PrefixEnd([]byte("q/"))}}
	// The first create reads the hooks' range from etcd (the cache has
	// not seen it); the next ones read everything from the cache.
	for i, name := range []string{"name", "name2", "name3"} {
		if i > 0 {
			if err := s.View(bg, func(tx kv.Txn) error { _, _, err := tx.Get([]byte(name)); return err }); err != nil {
				t.Fatal(err)
			}
		}
		before := s.Requests()
		err := s.Update(bg, func(tx kv.Txn) error {
			if err := kv.Prefetch(tx, [][]byte{[]byte("dir"), []byte(name)}, hooks); err != nil {
				return err
			}
			v, ok, err := tx.Get([]byte("dir"))
			if err != nil || !ok {
				return errors.Join(err, errors.New("dir missing"))
			}
			if _, ok, err := tx.Get([]byte(name)); err != nil || ok {
				return errors.Join(err, kv.ErrConflict)
			}
			if err := tx.Scan(hooks[0].Start, hooks[0].End, func(_, _ []byte) (bool, error) { return true, nil }); err != nil {
				return err
			}
			if err := tx.Put([]byte(name), v); err != nil {
				return err
			}
			return tx.Put([]byte("dir"), append(v, '1'))
		})
		if err != nil {
			t.Fatal(err)
		}
		got := s.Requests().Sub(before).Total()
		t.Logf("create %d: %d requests", i, got)
		if i > 0 && got != 1 {
			t.Errorf("create %q after its lookup: %d etcd requests; want 1 (the commit)", name, got)
		}
	}
	if v := get(t, s, "dir"); v != "1111" {
		t.Fatalf("dir = %q after three creates; want 1111", v)
	}
}

// TestReadCacheStale: another client changes keys this store has cached.
// An Update that wrote from a stale entry fails its compare and runs
// again reading etcd; one that only read, or failed on what it read,
// checks its reads before it returns: neither answers from the stale
// entry.
func TestReadCacheStale(t *testing.T) {
	c := etcdtest.Start(t, 1)
	a := open(t, c, etcdkv.Options{Prefix: "/stale"})
	b := open(t, c, etcdkv.Options{Prefix: "/stale"})
	bg := context.Background()
	put(t, a, "x", "1") // a caches x = 1
	put(t, b, "x", "2")
	// Writing from x.
	if err := a.Update(bg, func(tx kv.Txn) error {
		v, _, err := tx.Get([]byte("x"))
		if err != nil {
			return err
		}
		return tx.Put([]byte("y"), v)
	}); err != nil {
		t.Fatal(err)
	}
	if v := get(t, b, "y"); v != "2" {
		t.Fatalf("y = %q; want 2 (written from a stale cached x)", v)
	}
	// Only reading x.
	put(t, b, "x", "3")
	var seen string
	if err := a.Update(bg, func(tx kv.Txn) error {
		v, _, err := tx.Get([]byte("x"))
		seen = string(v)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if seen != "3" {
		t.Fatalf("a read-only Update saw x = %q; want 3", seen)
	}
	// Failing on what it read: a is told x exists after b deleted it.
	put(t, a, "z", "1")
	if _, err := b.Client().Delete(bg, b.Prefix()+"k/z"); err != nil {
		t.Fatal(err)
	}
	errExists := errors.New("exists")
	if err := a.Update(bg, func(tx kv.Txn) error {
		if _, ok, err := tx.Get([]byte("z")); err != nil || ok {
			return errors.Join(err, errExists)
		}
		return tx.Put([]byte("z"), []byte("new"))
	}); err != nil {
		t.Fatalf("create of z that b deleted: %v", err)
	}
	if v := get(t, b, "z"); v != "new" {
		t.Fatalf("z = %q; want new", v)
	}
}

func put(t *testing.T, s kv.Store, k, v string) {
	t.Helper()
	if err := s.Update(context.Background(), func(tx kv.Txn) error { return tx.Put([]byte(k), []byte(v)) }); err != nil {
		t.Fatal(err)
	}
}
