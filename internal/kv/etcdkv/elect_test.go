package etcdkv_test

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"tessera/internal/kv"
	"tessera/internal/kv/etcdkv"
	"tessera/internal/kv/etcdkv/etcdtest"
)

// waitClosed fails the test when ch does not close (a hang guard, no speed
// requirement).
func waitClosed(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(2 * time.Minute):
		t.Fatalf("%s: Done did not close", what)
	}
}

// TestLeadershipAcrossStores: two stores (two processes' clients) campaign
// for one election. The loser wins when the leader's store closes; when the
// new leader's lease is gone (as when its process is cut off for longer
// than the TTL) its Done closes and the next candidate wins.
func TestLeadershipAcrossStores(t *testing.T) {
	c := etcdtest.Start(t, 1)
	ctx := context.Background()
	openS := func() *etcdkv.Store {
		s, err := etcdkv.Open(ctx, etcdkv.Options{Endpoints: c.Endpoints(), Prefix: "/elect", SessionTTL: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	a, b, d := openS(), openS(), openS()
	la, err := a.Campaign(ctx, "collector", "a")
	if err != nil {
		t.Fatal(err)
	}
	won := make(chan kv.Leadership, 1)
	go func() {
		l, err := b.Campaign(ctx, "collector", "b")
		if err != nil {
			t.Error(err)
			close(won)
			return
		}
		won <- l
	}()
	a.Close()
	waitClosed(t, la.Done(), "a closed")
	var lb kv.Leadership
	select {
	case lb = <-won:
	case <-time.After(2 * time.Minute):
		t.Fatal("b did not win after a's store closed")
	}
	if lb == nil {
		t.Fatal("b's campaign failed")
	}

	wonD := make(chan kv.Leadership, 1)
	go func() {
		l, err := d.Campaign(ctx, "collector", "d")
		if err != nil {
			t.Error(err)
			close(wonD)
			return
		}
		wonD <- l
	}()
	// b's lease goes (revoked here, as if it had lapsed): the lease of
	// its candidate key, whose value is its id.
	resp, err := b.Client().Get(ctx, "/elect/e/collector", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	revoked := false
	for _, k := range resp.Kvs {
		if string(k.Value) == "b" {
			if _, err := b.Client().Revoke(ctx, clientv3.LeaseID(k.Lease)); err != nil {
				t.Fatal(err)
			}
			revoked = true
		}
	}
	if !revoked {
		t.Fatalf("no candidate key of b under /elect/e/collector: %v", resp.Kvs)
	}
	waitClosed(t, lb.Done(), "b's lease revoked")
	select {
	case ld := <-wonD:
		if ld == nil {
			t.Fatal("d's campaign failed")
		}
		_ = ld.Resign(ctx)
	case <-time.After(2 * time.Minute):
		t.Fatal("d did not win after b's lease went")
	}
}

// TestCampaignEndsWhenItsSessionDoes: a candidate waiting behind a leader
// whose own lease goes (revoked here, as when its member was cut off for
// longer than the TTL) has no candidate key any more. Its Campaign must
// return an error then, so that the caller campaigns again on a new session;
// before, it went on waiting for the leader's key and, when that went,
// "won" with a session already over, possibly while a later candidate led.
func TestCampaignEndsWhenItsSessionDoes(t *testing.T) {
	c := etcdtest.Start(t, 1)
	ctx := context.Background()
	openS := func() *etcdkv.Store {
		s, err := etcdkv.Open(ctx, etcdkv.Options{Endpoints: c.Endpoints(), Prefix: "/elect2", SessionTTL: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	a, b := openS(), openS()
	la, err := a.Campaign(ctx, "mover", "a")
	if err != nil {
		t.Fatal(err)
	}
	defer la.Resign(ctx)
	type result struct {
		l   kv.Leadership
		err error
	}
	res := make(chan result, 1)
	go func() {
		l, err := b.Campaign(ctx, "mover", "b")
		res <- result{l, err}
	}()
	// b's candidate key appears; then its lease goes.
	var lease clientv3.LeaseID
	for range 600 {
		resp, err := b.Client().Get(ctx, "/elect2/e/mover", clientv3.WithPrefix())
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range resp.Kvs {
			if string(k.Value) == "b" {
				lease = clientv3.LeaseID(k.Lease)
			}
		}
		if lease != 0 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if lease == 0 {
		t.Fatal("b's candidate key never appeared")
	}
	if _, err := b.Client().Revoke(ctx, lease); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-res:
		if r.err == nil {
			t.Fatalf("b's campaign won while a leads and b's lease is gone")
		}
		t.Logf("b's campaign: %v", r.err)
	case <-time.After(time.Minute):
		t.Fatal("b's campaign still waits a minute after its lease went (a still leads)")
	}
	select {
	case <-la.Done():
		t.Fatal("a's leadership ended")
	default:
	}
}
