package mover

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"tessera/internal/block"
	blockclient "tessera/internal/block/client"
	"tessera/internal/block/disk"
	blockserver "tessera/internal/block/server"
	"tessera/internal/kv/memkv"
	"tessera/internal/meta"
	"tessera/internal/meta/metatest"
)

// testCluster is a meta service over memkv and block servers (httptest +
// disk stores) in process.
type testCluster struct {
	t       *testing.T
	ctx     context.Context
	svc     *meta.Service
	clock   *metatest.Clock
	stores  map[string]*disk.Store
	servers map[string]*httptest.Server
	live    []block.Hash
}

func newTestCluster(t *testing.T, n, r int) *testCluster {
	store := memkv.New()
	t.Cleanup(func() { store.Close() })
	clock := metatest.NewClock()
	svc, err := meta.New(store, meta.Options{Replicas: r, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	c := &testCluster{t: t, ctx: context.Background(), svc: svc, clock: clock,
		stores: map[string]*disk.Store{}, servers: map[string]*httptest.Server{}}
	for i := range n {
		c.addServer(fmt.Sprintf("b%d", i))
	}
	return c
}

func (c *testCluster) addServer(id string) {
	st, err := disk.Open(c.t.TempDir())
	if err != nil {
		c.t.Fatal(err)
	}
	hs := httptest.NewServer(blockserver.New(st, blockserver.Options{}))
	c.t.Cleanup(func() { hs.Close(); st.Close() })
	c.stores[id], c.servers[id] = st, hs
	if _, err := c.svc.RegisterServer(c.ctx, meta.Server{ID: id, Addr: strings.TrimPrefix(hs.URL, "http://")}); err != nil {
		c.t.Fatal(err)
	}
}

// writeFile commits a file of n small blocks, each put on its placement.
func (c *testCluster) writeFile(name string, n int) {
	in, err := c.svc.Create(c.ctx, meta.CreateReq{Parent: meta.RootIno, Name: name, Mode: syscall.S_IFREG | 0644})
	if err != nil {
		c.t.Fatal(err)
	}
	m, _ := c.svc.Servers(c.ctx)
	var ups []string
	for _, s := range m.Servers {
		ups = append(ups, s.ID)
	}
	req := meta.CommitReq{Ino: in.Ino, Size: uint64(n) * meta.DefaultBlockSize, Forced: true}
	for i := range n {
		data := []byte(fmt.Sprintf("%s block %d %s", name, i, strings.Repeat("x", 1000)))
		h := block.Sum(data)
		for _, id := range writerPick(h, ups, m.Replicas) {
			if err := c.stores[id].Put(c.ctx, h, data); err != nil {
				c.t.Fatal(err)
			}
		}
		req.Changes = append(req.Changes, meta.BlockChange{Index: uint64(i), New: h})
		c.live = append(c.live, h)
	}
	if _, err := c.svc.Commit(c.ctx, req); err != nil {
		c.t.Fatal(err)
	}
}

func (c *testCluster) mover(after func(Step)) *Mover {
	return New(Config{
		Meta: c.svc,
		Dial: func(s meta.Server) (BlockServer, error) {
			return blockclient.New(s.Addr, blockclient.Options{Tries: 1}), nil
		},
		Rate:      -1,
		Now:       c.clock.Now,
		AfterStep: after,
	})
}

// copies counts each live block's copies on the servers that pass keep.
func (c *testCluster) copies(keep func(id string) bool) map[block.Hash]int {
	out := map[block.Hash]int{}
	for id, st := range c.stores {
		if !keep(id) {
			continue
		}
		st.List(c.ctx, func(info block.Info) error { out[info.Hash]++; return nil })
	}
	return out
}

func (c *testCluster) minCopies(keep func(id string) bool) int {
	cp := c.copies(keep)
	least := 1 << 30
	for _, h := range c.live {
		least = min(least, cp[h])
	}
	return least
}

func (c *testCluster) round(mv *Mover) meta.MoverProgress {
	c.t.Helper()
	p, err := mv.Round(c.ctx)
	if err != nil {
		c.t.Fatalf("round: %v", err)
	}
	return p
}

func all(string) bool { return true }

func TestMoverRestoresCopiesOfADownServer(t *testing.T) {
	c := newTestCluster(t, 4, 2)
	c.writeFile("f", 40)
	c.servers["b1"].Close()
	c.clock.Advance(10e9)
	for _, id := range []string{"b0", "b2", "b3"} {
		c.svc.RegisterServer(c.ctx, meta.Server{ID: id, Addr: strings.TrimPrefix(c.servers[id].URL, "http://")})
	}
	if _, err := c.svc.SweepServers(c.ctx, c.clock.Now(), 5e9); err != nil {
		t.Fatal(err)
	}
	alive := func(id string) bool { return id != "b1" }
	if c.minCopies(alive) != 1 {
		t.Fatal("want blocks with one copy left")
	}
	mv := c.mover(nil)
	p := c.round(mv)
	if p.UnderReplicated != 0 || p.BytesMoved == 0 || p.Round != 1 || p.Running {
		t.Fatalf("after the repair: %+v", p)
	}
	if got := c.minCopies(alive); got != 2 {
		t.Fatalf("fewest copies on live servers %d, want 2", got)
	}
	stored, _ := c.svc.MoverProgress(c.ctx)
	if !reflect.DeepEqual(stored, p) {
		t.Fatalf("stored %+v, returned %+v", stored, p)
	}
	if p := c.round(mv); p.BytesMoved != 0 || p.BytesToMove != 0 || p.Misplaced != 0 || p.Round != 2 {
		t.Fatalf("second round: %+v", p)
	}
}

// TestMoverReportsLostBlocksWithFiles: a block whose every copy is gone
// (moved aside as corrupt) is reported lost, with the inode naming it, and
// the round still repairs what it can.
func TestMoverReportsLostBlocksWithFiles(t *testing.T) {
	c := newTestCluster(t, 3, 2)
	c.writeFile("f", 6)
	lost := c.live[2]
	for id, st := range c.stores {
		// Corrupt every copy; a check moves each aside, as the scrub does.
		if _, err := os.Stat(st.Path(lost)); err != nil {
			continue
		}
		if err := os.WriteFile(st.Path(lost), []byte("rot"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := st.Check(c.ctx, lost, true); err == nil {
			t.Fatalf("%s: a corrupt copy checked good", id)
		}
	}
	in, err := c.svc.Lookup(c.ctx, meta.RootIno, "f")
	if err != nil {
		t.Fatal(err)
	}
	mv := c.mover(nil)
	p := c.round(mv)
	if p.Lost != 1 || len(p.LostBlocks) != 1 || p.LostBlocks[0].Hash != lost ||
		!reflect.DeepEqual(p.LostBlocks[0].Inos, []meta.Ino{in.Ino}) {
		t.Fatalf("progress = %+v; want block %s lost, naming inode %d", p, lost.Short(), in.Ino)
	}
	if p.UnderReplicated != 1 {
		t.Fatalf("under-replicated = %d; want 1 (the lost block)", p.UnderReplicated)
	}
	stored, _ := c.svc.MoverProgress(c.ctx)
	if !reflect.DeepEqual(stored, p) {
		t.Fatalf("stored %+v, returned %+v", stored, p)
	}
}

// TestMoverReplicasAboveServers: with R larger than the servers, every
// block is under-replicated, never 0.
func TestMoverReplicasAboveServers(t *testing.T) {
	c := newTestCluster(t, 2, 2)
	c.writeFile("f", 5)
	if _, err := c.svc.SetReplicas(c.ctx, 3); err != nil {
		t.Fatal(err)
	}
	p := c.round(c.mover(nil))
	if p.UnderReplicated != 5 || p.Lost != 0 {
		t.Fatalf("R=3 over 2 servers: %+v; want all 5 blocks under-replicated, none lost", p)
	}
}

func TestMoverRebalancesOntoANewServer(t *testing.T) {
	const blocks = 200
	c := newTestCluster(t, 4, 2)
	c.writeFile("f", blocks)
	c.addServer("b4")
	var mu sync.Mutex
	copies, removes := 0, 0
	mv := c.mover(func(s Step) {
		mu.Lock()
		defer mu.Unlock()
		if s.Kind == "copy" {
			copies++
		} else {
			removes++
		}
	})
	p := c.round(mv)
	want := blocks * 2 / 5
	if copies != removes || copies < want/2 || copies > want*3/2 {
		t.Fatalf("%d copies, %d removes; want about %d", copies, removes, want)
	}
	if c.copies(func(id string) bool { return id == "b4" }) == nil || c.minCopies(all) != 2 || p.Misplaced != 0 {
		t.Fatalf("after the rebalance: %+v", p)
	}
	for h, n := range c.copies(all) {
		if n != 2 {
			t.Fatalf("block %s has %d copies", h.Short(), n)
		}
	}
}

func TestMoverDrainNeverUnderR(t *testing.T) {
	c := newTestCluster(t, 4, 2)
	c.writeFile("f", 120)
	if _, err := c.svc.SetServerState(c.ctx, "b2", meta.StateDraining); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	steps := 0
	mv := c.mover(func(Step) {
		mu.Lock()
		defer mu.Unlock()
		steps++
		if n := c.minCopies(all); n < 2 {
			t.Errorf("after step %d a block has %d copies", steps, n)
		}
	})
	p := c.round(mv)
	if t.Failed() {
		return
	}
	var left int
	c.stores["b2"].List(c.ctx, func(block.Info) error { left++; return nil })
	if left != 0 || steps == 0 || p.UnderReplicated != 0 || p.Misplaced != 0 {
		t.Fatalf("b2 still holds %d blocks after %d steps; %+v", left, steps, p)
	}
	if n := c.minCopies(func(id string) bool { return id != "b2" }); n != 2 {
		t.Fatalf("fewest copies on up servers %d", n)
	}
}

func TestBucket(t *testing.T) {
	clock := metatest.NewClock()
	var slept []time.Duration
	b := newBucket(1000, clock.Now, func(_ context.Context, d time.Duration) error {
		slept = append(slept, d)
		clock.Advance(d)
		return nil
	})
	b.take(context.Background(), 1000) // the burst
	if len(slept) != 0 {
		t.Fatalf("slept %v within the burst", slept)
	}
	b.take(context.Background(), 500)
	b.take(context.Background(), 2000) // larger than the burst: debt
	if len(slept) != 2 || slept[0] != 500*time.Millisecond || slept[1] != 2*time.Second {
		t.Fatalf("slept %v; want [500ms 2s]", slept)
	}
	clock.Advance(10 * time.Second) // saves at most the burst
	b.take(context.Background(), 1000)
	b.take(context.Background(), 1)
	if len(slept) != 3 || slept[2] != time.Millisecond {
		t.Fatalf("slept %v; want a third sleep of 1ms", slept)
	}
	if (*bucket)(nil).take(context.Background(), 1<<40) != nil || newBucket(-1, clock.Now, nil) != nil {
		t.Fatal("an unlimited bucket waits")
	}
}
