package cluster

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"tessera/internal/kv/etcdkv/etcdtest"
	"tessera/internal/wan"
)

// TestSitesEtcd: the Sites harness's etcd members (one per site of the
// rNFS Figure 6 matrix) form one cluster whose peer traffic pays the WAN:
// a write commits only after a round trip of at least 60 ms; a partitioned
// site's member is cut off while the majority goes on writing, and after
// healing it catches up and reads the majority's write.
func TestSitesEtcd(t *testing.T) {
	mesh, err := wan.NewMesh(wan.MeshOptions{RTT: Figure6RTT()})
	if err != nil {
		t.Fatal(err)
	}
	s := &Sites{opts: SitesOptions{EtcdBin: etcdtest.Binary(t), Dir: t.TempDir(), Sites: []string{"siteA", "siteB", "siteC"},
		RTT: Figure6RTT()}, log: newLogBuf(1 << 20), mesh: mesh}
	t.Cleanup(func() {
		s.stopEtcd()
		mesh.Close()
	})
	if err := s.startEtcd(); err != nil {
		t.Fatal(err)
	}
	if got := etcdPeerLatency(Figure6RTT()); got != 30*time.Millisecond {
		t.Fatalf("etcd peer one-way latency for Figure 6: %v, want 30ms", got)
	}
	cli := func(i int) *clientv3.Client {
		c, err := clientv3.New(clientv3.Config{Endpoints: []string{"http://" + s.etcd[i].clientAddr},
			DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	ctx := context.Background()
	bounded := func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, 30*time.Second) }

	// A commit needs a follower: at least one round trip through a link.
	a := cli(0)
	for k := range 3 {
		c, cancel := bounded()
		start := time.Now()
		_, err := a.Put(c, "k", "v")
		cancel()
		if err != nil {
			t.Fatalf("put %d through site A: %v", k, err)
		}
		if d := time.Since(start); d < 60*time.Millisecond {
			t.Fatalf("put %d through site A committed in %v: less than the 60 ms round trip a majority needs", k, d)
		}
	}

	// The benchmark's helpers: every member is listed with its process,
	// the commits above crossed every member's peer link, and leadership
	// moves where it is asked to.
	procs := s.Procs()
	if len(procs) != 3 {
		t.Fatalf("Procs lists %v, want the 3 etcd members", procs)
	}
	for _, p := range procs {
		if p.Name != "etcd" || p.PID != s.etcd[p.Site].cmd.Process.Pid {
			t.Fatalf("Procs lists %+v, not site %d's etcd member", p, p.Site)
		}
	}
	for i := range 3 {
		if n := s.EtcdPeerBytes(i); n <= 0 {
			t.Fatalf("site %d's etcd peer link counted %d bytes after three commits", i, n)
		}
	}
	leader := s.EtcdLeader(ctx)
	if leader < 0 {
		t.Fatal("EtcdLeader: no member leads after three commits")
	}
	to := (leader + 1) % 3
	if err := s.MoveEtcdLeader(ctx, to); err != nil {
		t.Fatal(err)
	}
	if got := s.EtcdLeader(ctx); got != to {
		t.Fatalf("after MoveEtcdLeader(%d) site %d leads", to, got)
	}

	// Site C cut off: A and B go on; C's member answers nothing.
	if err := s.Partition(2); err != nil {
		t.Fatal(err)
	}
	// (If C led, A and B first elect a leader: retried, bounded.)
	b := cli(1)
	for try := 0; ; try++ {
		c, cancel := bounded()
		_, err = b.Put(c, "k", "during")
		cancel()
		if err == nil {
			break
		}
		if try == 5 {
			t.Fatalf("put through site B while C is partitioned: %v", err)
		}
	}
	cc := cli(2)
	short, cancel := context.WithTimeout(ctx, 2*time.Second)
	if _, err := cc.Put(short, "k", "minority"); err == nil {
		t.Fatal("a put through the partitioned site C succeeded")
	}
	cancel()

	// Healed, C catches up: a linearizable read there sees B's write.
	if err := s.Heal(2); err != nil {
		t.Fatal(err)
	}
	var last string
	for range 120 {
		c, cancel := context.WithTimeout(ctx, 5*time.Second)
		r, err := cc.Get(c, "k")
		cancel()
		if err == nil && len(r.Kvs) == 1 {
			if last = string(r.Kvs[0].Value); last == "during" {
				return
			}
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("site C after healing reads k=%q, want the majority's %q", last, "during")
}
