package etcdkv_test

import (
	"context"
	"errors"
	"testing"

	"tessera/internal/kv"
	"tessera/internal/kv/etcdkv"
	"tessera/internal/kv/etcdkv/etcdtest"
)

// TestLocalUpdateReadsChecked: with update-reads=local, an Update whose fn
// failed, or that only read, returns only once what it read is checked
// current; when it changed (here under fn's feet, as a lagging member
// would show), fn runs again on the latest snapshot.
func TestLocalUpdateReadsChecked(t *testing.T) {
	c := etcdtest.Start(t, 1)
	localReadsChecked(t, c, open(t, c, etcdkv.Options{LocalUpdateReads: true}), context.Background())
}

// TestSerializableUpdateReadsLocally: an Update whose context asks for
// kv.Serializable reads as update-reads=local does, on a store without
// it. (Reading at the leader, the failing fn's first run would end the
// Update with its error: nothing checks a read that is current by
// construction.)
func TestSerializableUpdateReadsLocally(t *testing.T) {
	c := etcdtest.Start(t, 1)
	localReadsChecked(t, c, open(t, c, etcdkv.Options{}), kv.WithConsistency(context.Background(), kv.Serializable))
}

func localReadsChecked(t *testing.T, c *etcdtest.Cluster, s *etcdkv.Store, ctx context.Context) {
	other := open(t, c, etcdkv.Options{Prefix: "/" + t.Name(), NoBatch: true})
	set := func(v string) {
		if err := other.Update(ctx, func(tx kv.Txn) error { return tx.Put([]byte("k"), []byte(v)) }); err != nil {
			t.Fatal(err)
		}
	}
	for _, failing := range []bool{true, false} {
		set("a")
		runs := 0
		var saw string
		err := s.Update(ctx, func(tx kv.Txn) error {
			runs++
			v, _, err := tx.Get([]byte("k"))
			if err != nil {
				return err
			}
			saw = string(v)
			if runs == 1 {
				set("b") // what fn read is stale from now on
			}
			if failing && saw == "a" {
				return errors.New("fn failed on k = a")
			}
			return nil
		})
		if err != nil || runs != 2 || saw != "b" {
			t.Errorf("failing fn %v: Update = %v after %d runs, last saw %q; want nil after 2 runs, b", failing, err, runs, saw)
		}
	}
}
