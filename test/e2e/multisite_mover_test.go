package e2e

import (
	"context"
	"testing"
	"time"

	"tessera/internal/kv/etcdkv/etcdtest"
	"tessera/test/cluster"
)

// TestMultiSiteMoverAfterEtcdLeaderLoss is issue 13's report: site C, whose
// etcd member leads, is partitioned (links cut, member frozen), so the
// etcd leadership moves to A or B. The mover (an elected singleton at some
// majority site) must go on completing rounds: `tessera status` at A shows
// the round count growing, not stuck "running", also with blocks it
// cannot copy to C.
func TestMultiSiteMoverAfterEtcdLeaderLoss(t *testing.T) {
	needBinary(t)
	s := cluster.StartSites(t, cluster.SitesOptions{
		Bin: suite.bin, EtcdBin: etcdtest.Binary(t), Dir: t.TempDir(), RTT: sitesRTT,
		MetaArgs:  []string{"--replicas", "2", "--mover-interval", "1s"},
		MountArgs: []string{"--meta-timeout", "20s"},
	})
	moveEtcdLeader(t, s, siteC)
	at := siteDir(t, s, "moving", "session")
	acks := &ackLog{}
	must(t, writeAcked(at[siteA], "before", 1000, 3, nil, acks))

	rounds := func() (int64, string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		res, err := s.Run(ctx, siteA, "status")
		if err != nil || res.ExitCode != 0 {
			return -1, res.Stdout + res.Stderr
		}
		st, err := cluster.ParseClusterStatus(res.Stdout)
		if err != nil {
			return -1, res.Stdout
		}
		return st.MoverRounds, st.Text
	}
	// grows waits (bounded) until the mover completed 3 more rounds.
	grows := func(what string) {
		t.Helper()
		start, _ := rounds()
		var n int64
		var out string
		for range 240 {
			if n, out = rounds(); start >= 0 && n >= start+3 {
				return
			}
			time.Sleep(time.Second)
		}
		t.Fatalf("%s: mover rounds %d -> %d after 240 polls; status at A:\n%s\nlog:\n%s", what, start, n, out, s.LogTail(80))
	}
	grows("before the partition")
	healed := false
	t.Cleanup(func() {
		if !healed {
			_ = s.Heal(siteC)
		}
	})
	must(t, s.Partition(siteC))
	// Writes at A during the partition leave C's copies to the mover.
	must(t, writeAcked(at[siteA], "during", 2000, 5, nil, acks))
	grows("C partitioned, its etcd member (the leader) frozen")
	must(t, s.Heal(siteC))
	healed = true
	grows("C healed")
}

// moveEtcdLeader makes site i's etcd member the leader (bounded tries).
func moveEtcdLeader(t *testing.T, s *cluster.Sites, i int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := s.MoveEtcdLeader(ctx, i); err != nil {
		t.Fatal(err)
	}
	t.Logf("etcd leader: m%d", i)
}
