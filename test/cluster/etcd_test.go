package cluster

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"tessera/internal/kv/etcdkv/etcdtest"
)

// TestEtcdFaults: the leader killed with SIGKILL, the cluster goes on with
// the two others and takes the member back on its data; a paused member
// and a moved leadership leave a value written before readable.
func TestEtcdFaults(t *testing.T) {
	e, err := StartEtcd(EtcdOptions{Bin: etcdtest.Binary(t), Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cli, err := clientv3.New(clientv3.Config{Endpoints: e.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	if _, err := cli.Put(ctx, "k", "v1"); err != nil {
		t.Fatal(err)
	}
	leader := e.Leader(ctx)
	if leader < 0 {
		t.Fatal("no member says it leads")
	}
	if err := e.Kill9(leader); err != nil {
		t.Fatal(err)
	}
	if e.PID(leader) != 0 {
		t.Errorf("member e%d killed, PID says %d", leader, e.PID(leader))
	}
	if err := e.WaitReady(ctx); err != nil {
		t.Fatalf("two members of three after the leader's kill: %v", err)
	}
	if _, err := cli.Put(ctx, "k", "v2"); err != nil {
		t.Fatal(err)
	}
	if err := e.Restart(ctx, leader); err != nil {
		t.Fatal(err)
	}
	other := (leader + 1) % e.Members()
	if err := e.Pause(other); err != nil {
		t.Fatal(err)
	}
	if err := e.Resume(other); err != nil {
		t.Fatal(err)
	}
	if err := e.MoveLeader(ctx, leader); err != nil {
		t.Fatal(err)
	}
	if got := e.Leader(ctx); got != leader {
		t.Errorf("after MoveLeader(%d) member %d leads", leader, got)
	}
	r, err := cli.Get(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Kvs) != 1 || string(r.Kvs[0].Value) != "v2" {
		t.Errorf("k = %v after the faults, want v2", r.Kvs)
	}
}
