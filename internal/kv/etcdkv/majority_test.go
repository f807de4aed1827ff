package etcdkv_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"tessera/internal/kv"
	"tessera/internal/kv/etcdkv"
	"tessera/internal/kv/etcdkv/etcdtest"
)

// waitLeaderless waits (bounded) until member i reports that it has no
// leader.
func waitLeaderless(t *testing.T, c *etcdtest.Cluster, i int) {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{c.Members[i].ClientURL}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	for range 600 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		st, err := cli.Status(ctx, c.Members[i].ClientURL)
		cancel()
		if err == nil && st.Leader == 0 {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("member %s still has a leader with two of three members dead", c.Members[i].Name)
}

// TestMajorityLost: with two of three members dead, an Update through the
// third fails with ErrNoMajority once MajorityWait has passed, and writes
// nothing, also after the members return; an Update that waits longer
// commits once they are back. A serializable View still reads.
func TestMajorityLost(t *testing.T) {
	c := etcdtest.Start(t, 3)
	ctx := context.Background()
	open := func(wait time.Duration) *etcdkv.Store {
		s, err := etcdkv.Open(ctx, etcdkv.Options{Endpoints: []string{c.Members[0].ClientURL}, Prefix: "/maj", MajorityWait: wait})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	impatient, patient := open(time.Second), open(10*time.Minute)
	if err := patient.Update(ctx, func(tx kv.Txn) error { return tx.Put([]byte("before"), []byte("1")) }); err != nil {
		t.Fatal(err)
	}

	c.Kill(1)
	c.Kill(2)
	waitLeaderless(t, c, 0)
	err := impatient.Update(ctx, func(tx kv.Txn) error { return tx.Put([]byte("lost"), []byte("x")) })
	if !errors.Is(err, etcdkv.ErrNoMajority) {
		t.Fatalf("Update without a majority: %v; want ErrNoMajority", err)
	}
	err = impatient.View(kv.WithConsistency(ctx, kv.Serializable), func(tx kv.Txn) error {
		v, ok, err := tx.Get([]byte("before"))
		if err == nil && (!ok || string(v) != "1") {
			err = fmt.Errorf("before = %q, %v; want 1", v, ok)
		}
		return err
	})
	if err != nil {
		t.Fatalf("serializable View without a majority: %v", err)
	}

	done := make(chan error, 1)
	go func() {
		// It reads first: the read, not only the commit, meets the
		// missing leader.
		done <- patient.Update(ctx, func(tx kv.Txn) error {
			if _, _, err := tx.Get([]byte("before")); err != nil {
				return err
			}
			return tx.Put([]byte("waited"), []byte("y"))
		})
	}()
	c.Restart(1)
	c.Restart(2)
	if err := <-done; err != nil {
		t.Fatalf("Update waiting for the majority to return: %v", err)
	}
	err = patient.View(ctx, func(tx kv.Txn) error {
		if _, ok, err := tx.Get([]byte("lost")); err != nil || ok {
			return fmt.Errorf("the refused write is there (%v, %v)", ok, err)
		}
		if v, ok, err := tx.Get([]byte("waited")); err != nil || string(v) != "y" {
			return fmt.Errorf("waited = %q, %v, %v; want y", v, ok, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
