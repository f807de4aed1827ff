package etcdkv_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"tessera/internal/kv/etcdkv"
	"tessera/internal/kv/etcdkv/etcdtest"
	"tessera/internal/meta"
)

// electedJob is one process's singleton under meta.Elected: it counts its
// ticks while it runs.
type electedJob struct {
	running atomic.Bool
	ticks   atomic.Int64
	starts  atomic.Int64 // times it became the leader
}

func (j *electedJob) run(ctx context.Context) {
	j.starts.Add(1)
	j.running.Store(true)
	defer j.running.Store(false)
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			j.ticks.Add(1)
		}
	}
}

// electedSites is three "sites" over a 3-member etcd, each process's store
// talking to its own member only (as test/cluster's Sites and the README's
// per-site commands do), each running one singleton under meta.Elected.
type electedSites struct {
	c      *etcdtest.Cluster
	jobs   [3]*electedJob
	cancel [3]context.CancelFunc
}

func startElectedSites(t *testing.T) *electedSites {
	t.Helper()
	es := &electedSites{c: etcdtest.Start(t, 3)}
	var wg sync.WaitGroup
	for i := range 3 {
		s, err := etcdkv.Open(context.Background(), etcdkv.Options{
			Endpoints: []string{es.c.Members[i].ClientURL}, Prefix: "/elected", SessionTTL: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		es.jobs[i], es.cancel[i] = &electedJob{}, cancel
		wg.Add(1)
		go func() {
			defer wg.Done()
			meta.Elected(ctx, s, "tessera/mover", fmt.Sprint("site", i), nil, es.jobs[i].run)
		}()
		t.Cleanup(func() { s.Close() })
	}
	// Cleanups run last first: the Elected loops end before the stores
	// close.
	t.Cleanup(func() {
		for _, c := range es.cancel {
			c()
		}
		wg.Wait()
	})
	return es
}

// holder waits until exactly one job runs and returns its index.
func (es *electedSites) holder(t *testing.T, among ...int) int {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		for _, i := range among {
			if es.jobs[i].running.Load() {
				return i
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no singleton runs among sites %v within 2 minutes", among)
	return -1
}

// settle is how long progresses lets a disturbance play out first: more
// than the sessions' TTL plus an etcd election, so that leases that lapse
// have lapsed (the test's 2 s TTL, the members' 2 s election timeout).
const settle = 8 * time.Second

// progresses waits settle, then until the jobs of among tick 50 more times
// in all: the singleton runs somewhere among them (a hang guard, not a
// speed bound).
func (es *electedSites) progresses(t *testing.T, what string, among ...int) {
	t.Helper()
	time.Sleep(settle)
	sum := func() (n int64) {
		for _, i := range among {
			n += es.jobs[i].ticks.Load()
		}
		return n
	}
	start := sum()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		if sum()-start >= 50 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s: the singleton made no progress among sites %v within 2 minutes (ticks %d -> %d; %s)", what, among, start, sum(), es)
}

// String reports each site's job: running, leaderships, ticks.
func (es *electedSites) String() string {
	s := ""
	for i, j := range es.jobs {
		s += fmt.Sprintf("site%d running=%v starts=%d ticks=%d; ", i, j.running.Load(), j.starts.Load(), j.ticks.Load())
	}
	return s
}

// others returns the sites other than the given ones.
func others(not ...int) []int {
	var out []int
	for i := range 3 {
		skip := false
		for _, n := range not {
			skip = skip || n == i
		}
		if !skip {
			out = append(out, i)
		}
	}
	return out
}

// TestElectedSurvivesEtcdLeaderStop is the report of issue 13's three-site
// test: the singleton's holder is at a site whose etcd member is not the
// etcd leader; the leader's member is frozen (SIGSTOP, as Sites.Partition
// does) so the etcd leadership moves. The singleton must keep running at a
// live site (the holder or, after its lease lapsed in the leader change,
// another), and again after the member returns.
func TestElectedSurvivesEtcdLeaderStop(t *testing.T) {
	es := startElectedSites(t)
	leader := es.c.Leader()
	if leader < 0 {
		t.Fatal("no etcd leader")
	}
	// The singleton's holder must not be the leader's site: let the
	// leader's site's candidate go if it won.
	h := es.holder(t, 0, 1, 2)
	if h == leader {
		es.cancel[h]()
		h = es.holder(t, others(leader)...)
	}
	es.progresses(t, "before", others(leader)...)
	t.Logf("etcd leader m%d, singleton at site%d; stopping m%d", leader, h, leader)
	es.c.Stop(leader)
	es.progresses(t, "etcd leader stopped", others(leader)...)
	es.c.Continue(leader)
	es.progresses(t, "etcd leader back", 0, 1, 2)
	t.Log(es)
}

// TestElectedHolderMemberStop freezes the member of the singleton's
// holder: its lease lapses, so its job must stop (Done closes) and the
// singleton run elsewhere; when the member returns and the others go, the
// holder's process must win again (it kept campaigning).
func TestElectedHolderMemberStop(t *testing.T) {
	es := startElectedSites(t)
	h := es.holder(t, 0, 1, 2)
	es.progresses(t, "before", h)
	es.c.Stop(h)
	deadline := time.Now().Add(2 * time.Minute)
	for es.jobs[h].running.Load() {
		if time.Now().After(deadline) {
			t.Fatalf("site%d's job still runs 2 minutes after its etcd member stopped", h)
		}
		time.Sleep(50 * time.Millisecond)
	}
	es.progresses(t, "holder's member stopped", others(h)...)
	es.c.Continue(h)
	for _, i := range others(h) {
		es.cancel[i]()
	}
	es.progresses(t, "holder's member back, the others gone", h)
	t.Log(es)
}
