package etcdkv_test

import (
	"context"
	"fmt"
	"testing"

	"tessera/internal/kv"
	"tessera/internal/kv/etcdkv"
	"tessera/internal/kv/etcdkv/etcdtest"
)

// TestCompactedSnapshotRunsAgain: when etcd compacts away the revision a
// transaction's snapshot reads at (between two of its reads), the
// transaction runs again on a fresh snapshot instead of failing with
// "required revision has been compacted": Views, linearizable and
// serializable, and Updates.
func TestCompactedSnapshotRunsAgain(t *testing.T) {
	c := etcdtest.Start(t, 1)
	s := open(t, c, etcdkv.Options{})
	bg := context.Background()
	n := 0
	// compactAfterChange changes k and compacts every revision before
	// the latest: the snapshot of a transaction that read k before can
	// no longer be read.
	compactAfterChange := func() {
		n++
		if err := s.Update(bg, func(tx kv.Txn) error { return tx.Put([]byte("k"), fmt.Appendf(nil, "%d", n)) }); err != nil {
			t.Fatal(err)
		}
		resp, err := s.Client().Get(bg, "compact-probe")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Client().Compact(bg, resp.Header.Revision); err != nil {
			t.Fatal(err)
		}
	}
	compactAfterChange()
	for _, tc := range []struct {
		name   string
		ctx    context.Context
		update bool
	}{
		{"linearizable view", bg, false},
		{"serializable view", kv.WithConsistency(bg, kv.Serializable), false},
		{"update", bg, true},
		{"serializable update", kv.WithConsistency(bg, kv.Serializable), true},
	} {
		runs := 0
		var first, last string
		fn := func(tx kv.Txn) error {
			runs++
			v, _, err := tx.Get([]byte("k"))
			if err != nil {
				return err
			}
			last = string(v)
			if runs == 1 {
				first = last
				compactAfterChange()
			}
			if _, _, err := tx.Get([]byte("other")); err != nil {
				return err
			}
			if tc.update {
				return tx.Put([]byte("seen"), v)
			}
			return nil
		}
		var err error
		if tc.update {
			err = s.Update(tc.ctx, fn)
		} else {
			err = s.View(tc.ctx, fn)
		}
		want := fmt.Sprint(n)
		if err != nil || runs != 2 || last != want {
			t.Errorf("%s: %v after %d runs, first saw k = %s, last %s; want nil after 2 runs, last %s", tc.name, err, runs, first, last, want)
		}
	}
}
