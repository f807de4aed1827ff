package etcdkv_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"tessera/internal/clock"
	"tessera/internal/kv"
	"tessera/internal/kv/etcdkv"
	"tessera/internal/kv/etcdkv/etcdtest"
)

// Three: an odd number of reads, so that the Views of a client that
// alternates between two members do not all begin on the same one.
var lagKeys = []string{"a", "b", "c"}

// lagging is a three-member cluster where member lag is cut off from
// its peers and lacks the writes of lagKeys, which member fresh (the
// leader) has; s is a store whose client spreads its requests over those
// two.
type lagging struct {
	c          *etcdtest.Cluster
	s          *etcdkv.Store
	fresh, lag int
}

// lagCluster starts three members, isolates one that does not lead from
// its peers and then writes every key of lagKeys (one Update) through the
// leader.
func lagCluster(t *testing.T, o etcdkv.Options) lagging {
	c := etcdtest.StartPartitionable(t, 3)
	ctx := context.Background()
	l := lagging{c: c, fresh: c.Leader()}
	if l.fresh < 0 {
		t.Fatal("no leader")
	}
	l.lag = (l.fresh + 1) % 3
	writer := openOn(t, etcdkv.Options{Endpoints: []string{c.Members[l.fresh].ClientURL}, Prefix: "/lag"})
	if err := writer.Update(ctx, func(tx kv.Txn) error { return tx.Put([]byte("before"), []byte("1")) }); err != nil {
		t.Fatal(err)
	}
	c.Isolate(l.lag)
	err := writer.Update(ctx, func(tx kv.Txn) error {
		for _, k := range lagKeys {
			if err := tx.Put([]byte(k), []byte("1")); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Until then its linearizable reads wait for the old leader, in
	// vain, up to etcd's request timeout.
	waitLeaderless(t, c, l.lag)
	o.Endpoints, o.Prefix = []string{c.Members[l.fresh].ClientURL, c.Members[l.lag].ClientURL}, "/lag"
	l.s = openOn(t, o)
	return l
}

// openOn opens a store on o.Endpoints, closed when the test ends.
func openOn(t *testing.T, o etcdkv.Options) *etcdkv.Store {
	t.Helper()
	s, err := etcdkv.Open(context.Background(), o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// readLagKeys reads every key of lagKeys in one View and reports whether
// the snapshot had them (all or none: a snapshot is consistent).
func readLagKeys(ctx context.Context, s *etcdkv.Store) (fresh bool, err error) {
	err = s.View(ctx, func(tx kv.Txn) error {
		n := 0
		for _, k := range lagKeys {
			v, ok, err := tx.Get([]byte(k))
			if err != nil {
				return err
			}
			if ok && string(v) != "1" {
				return fmt.Errorf("%s = %q; want 1", k, v)
			}
			if ok {
				n++
			}
		}
		if n != 0 && n != len(lagKeys) {
			return fmt.Errorf("%d of %d keys written together in the snapshot", n, len(lagKeys))
		}
		fresh = n == len(lagKeys)
		return nil
	})
	return fresh, err
}

// TestSerializableViewsOnALaggingMember: serializable Views whose reads
// the client spreads over an up-to-date member and one that has not
// applied the latest revisions (cut off from its peers) all succeed, each
// on a consistent snapshot: a read at a revision the lagging member lacks
// is asked again where it can be answered instead of failing with etcd's
// "required revision is a future revision" (issue 23, which reached the
// application as EIO). Also once the member is back and catching up.
func TestSerializableViewsOnALaggingMember(t *testing.T) {
	l := lagCluster(t, etcdkv.Options{})
	s := l.s
	ctx := kv.WithConsistency(context.Background(), kv.Serializable)
	// The client alternates between the two members, so about half the
	// Views read their first key (which fixes the revision) from the
	// member that has it and then ask the lagging one. Until the client's
	// connection to both members is up it may send every read to one of
	// them: rounds of 20 Views go on (at most 5) until reads have crossed.
	fresh, views := 0, 0
	for round := 0; round < 5 && (fresh == 0 || etcdkv.Lagged(s) == 0); round++ {
		for range 20 {
			ok, err := readLagKeys(ctx, s)
			if err != nil {
				t.Fatalf("view %d with a member lagging: %v", views, err)
			}
			views++
			if ok {
				fresh++
			}
		}
	}
	if fresh == 0 || etcdkv.Lagged(s) == 0 {
		t.Fatalf("%d of %d views saw the latest writes and the lagging member refused %d reads; the test did not read across members",
			fresh, views, etcdkv.Lagged(s))
	}
	l.c.Heal(l.lag)
	for i := range 20 {
		if _, err := readLagKeys(ctx, s); err != nil {
			t.Fatalf("view %d with the member catching up: %v", i, err)
		}
	}
}

// TestLaggingMemberWithoutLeader: when the only member the client still
// reaches lags the snapshot's revision and has no leader, a View's read
// waits Options.MajorityWait (on the store's clock) and fails with
// ErrNoMajority, not with etcd's "future revision"; a View that waits
// longer succeeds once the cluster is whole again.
func TestLaggingMemberWithoutLeader(t *testing.T) {
	clk := clock.NewFake(time.Unix(1e9, 0))
	l := lagCluster(t, etcdkv.Options{Clock: clk, MajorityWait: 30 * time.Second})
	c, s := l.c, l.s
	others := []int{l.fresh, 3 - l.fresh - l.lag}
	ctx, cancel := context.WithTimeout(kv.WithConsistency(context.Background(), kv.Serializable), 5*time.Minute)
	defer cancel()

	// view runs a View whose first read (which fixes the snapshot's
	// revision) is answered by the up-to-date member, and which then
	// calls between.
	errWrongMember := errors.New("the first read went to the lagging member")
	view := func(between func()) error {
		for {
			first := true
			err := s.View(ctx, func(tx kv.Txn) error {
				if _, ok, err := tx.Get([]byte(lagKeys[0])); err != nil || !ok {
					return errors.Join(err, errWrongMember)
				}
				if first {
					first = false
					between()
				}
				_, _, err := tx.Get([]byte(lagKeys[1]))
				return err
			})
			if !errors.Is(err, errWrongMember) {
				return err
			}
		}
	}
	// advance moves the fake clock on while the View waits on it.
	advance := func(done <-chan error, step time.Duration) error {
		for {
			select {
			case err := <-done:
				return err
			case <-time.After(20 * time.Millisecond):
				if clk.Pending() > 0 {
					clk.Advance(step)
				}
			}
		}
	}

	done := make(chan error, 1)
	start := clk.Now()
	go func() { done <- view(func() { c.Kill(others[0]); c.Kill(others[1]) }) }()
	// Big steps: each try spends real time in the client's own retries.
	err := advance(done, 10*time.Second)
	if !errors.Is(err, etcdkv.ErrNoMajority) {
		t.Fatalf("view with only a lagging leaderless member: %v; want ErrNoMajority", err)
	}
	if waited := clock.Since(clk, start); waited < 30*time.Second {
		t.Fatalf("view failed after %v on its clock; want MajorityWait, 30s", waited)
	}

	c.RestartAll(others...)
	c.Heal(l.lag)
	go func() { done <- view(func() {}) }()
	if err := advance(done, time.Second); err != nil {
		t.Fatalf("view with the cluster whole again: %v", err)
	}
}
