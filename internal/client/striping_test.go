package client

import (
	"bytes"
	"context"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"tessera/internal/block"
	"tessera/internal/meta"
	"tessera/internal/placement"
)

// countingStore counts the Gets a flakyStore answers.
type countingStore struct {
	*flakyStore
	mu   sync.Mutex
	gets int
}

func (s *countingStore) Get(ctx context.Context, h block.Hash) ([]byte, error) {
	s.mu.Lock()
	s.gets++
	s.mu.Unlock()
	return s.flakyStore.Get(ctx, h)
}

func (s *countingStore) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gets
}

func candidatesOf(c *Client, h block.Hash, r int) []string {
	c.router.mu.RLock()
	defer c.router.mu.RUnlock()
	return placement.Candidates(placement.Pick(h, c.router.mu.up, len(c.router.mu.up)), c.router.domainLocked, r)
}

// A put leaves out the candidate this client has most requests queued or in
// flight to.
func TestPutAvoidsBusyServer(t *testing.T) {
	ctx := context.Background()
	_, c, stores := newReplicaEnv(t, 4, 1)
	for i, busy := range []int{0, 1} {
		data := bytes.Repeat([]byte{byte('a' + i)}, 1000)
		h := block.Sum(data)
		cands := candidatesOf(c, h, 1)
		if len(cands) != 2 {
			t.Fatalf("candidates %v, want 2 for R=1", cands)
		}
		b := &c.router.mu.lanes[cands[busy]].busy
		b.Add(5)
		rep, err := c.router.put(ctx, h, data, placement.Copies(1))
		if err != nil {
			t.Fatal(err)
		}
		if err := rep.wait(ctx); err != nil {
			t.Fatal(err)
		}
		b.Add(-5)
		other := cands[1-busy]
		if !stores[other].holds(h) || stores[cands[busy]].holds(h) {
			t.Fatalf("block went elsewhere than %s with %s busy", other, cands[busy])
		}
		for id, st := range stores {
			if n := c.router.mu.lanes[id].busy.Load(); n != 0 {
				t.Fatalf("server %s: %d requests still counted after the put", id, n)
			}
			if id != other && st.holds(h) {
				t.Fatalf("a copy on %s too", id)
			}
		}
	}
}

// Writing a block again goes where a copy already is, however loaded that
// server is: no candidate gains a copy it does not need (dedup).
func TestPutPrefersExistingCopy(t *testing.T) {
	ctx := context.Background()
	_, c, stores := newReplicaEnv(t, 4, 1)
	data := bytes.Repeat([]byte{'d'}, 1000)
	h := block.Sum(data)
	cands := candidatesOf(c, h, 1)
	if len(cands) != 2 {
		t.Fatalf("candidates %v, want 2 for R=1", cands)
	}
	put := func() {
		t.Helper()
		rep, err := c.router.put(ctx, h, data, placement.Copies(1))
		if err != nil {
			t.Fatal(err)
		}
		if err := rep.wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	put()
	holder := cands[0]
	if !stores[holder].holds(h) {
		holder = cands[1]
	}
	// Make the holder the busiest: the load alone would now leave it out.
	b := &c.router.mu.lanes[holder].busy
	b.Add(5)
	put()
	b.Add(-5)
	for _, id := range cands {
		if id != holder && stores[id].holds(h) {
			t.Fatalf("the second write put a copy on %s too; the block was on %s", id, holder)
		}
	}
}

// Blocks queued to servers at once spread evenly: the choice sees the
// claims of the blocks before it. Plain rendezvous would give the busiest of
// 8 servers ~20 % over the mean for 256 blocks.
func TestTargetsSpreadQueuedBlocks(t *testing.T) {
	_, c, _ := newReplicaEnv(t, 8, 1)
	n := map[string]int{}
	var claimed []rankedStore
	for _, h := range testHashes(256) {
		first, _ := c.router.targets(h, placement.Group{Any: true, K: 1}, nil)
		cands := candidatesOf(c, h, 1)
		if len(first) != 1 || !slices.Contains(cands, first[0].id) {
			t.Fatalf("target %v not among the candidates %v", first, cands)
		}
		n[first[0].id]++
		claimed = append(claimed, first...)
	}
	for id, k := range n {
		if k > 32+2 || k < 32-2 {
			t.Fatalf("server %s got %d of 256 queued blocks, want 32 ± 2 (%v)", id, k, n)
		}
	}
	for _, s := range claimed {
		s.lane.busy.Add(-1)
	}
}

// The requests in flight to each server vary with transfer times; within a
// lane's depth that noise must not steer the choice, or one server of 8
// ends up with 34 of a file's 256 blocks and another with 27, and a striped
// read of the file lasts as long as the fullest.
func TestTargetsEvenUnderTransferNoise(t *testing.T) {
	_, c, _ := newReplicaEnv(t, 8, 1)
	// Each server has its own share of slow transfers in flight, up to
	// the lane's depth, for the whole write.
	rng := rand.New(rand.NewPCG(1, 2))
	offset := map[*lane]int64{}
	for _, l := range c.router.mu.lanes {
		offset[l] = rng.Int64N(uploadsPerServer + 1)
	}
	n := map[string]int{}
	for _, h := range testHashes(256) {
		for l, k := range offset {
			l.busy.Store(k)
		}
		first, _ := c.router.targets(h, placement.Group{Any: true, K: 1}, nil)
		n[first[0].id]++
	}
	for id, k := range n {
		if k > 32+2 || k < 32-2 {
			t.Fatalf("server %s got %d of 256 blocks, want 32 ± 2 (%v)", id, k, n)
		}
	}
}

// A block on the last candidate (rank R+1) is read with one miss on the
// rank before it, and no other server is asked.
func TestReadFromLastCandidate(t *testing.T) {
	ctx := context.Background()
	svc, c, stores := newReplicaEnv(t, 5, 1)
	in, _ := svc.Create(ctx, meta.CreateReq{Parent: meta.RootIno, Name: "f", Mode: 0o100644})
	data := bytes.Repeat([]byte("striped!"), 8<<10) // one full 64 KiB block
	bh := block.Sum(data)
	cands := candidatesOf(c, bh, 1)
	// Keep the block off cands[0]: make it look busy to this writer.
	c.router.mu.lanes[cands[0]].busy.Add(100)
	h, _, _ := c.Open(ctx, in, 0)
	h.Write(ctx, 0, data)
	if err := h.Fsync(ctx); err != nil {
		t.Fatal(err)
	}
	h.Release(ctx)
	c.router.mu.lanes[cands[0]].busy.Add(-100)
	if !stores[cands[1]].holds(bh) || stores[cands[0]].holds(bh) {
		t.Fatalf("block not on the second candidate %s alone", cands[1])
	}

	counted := map[string]*countingStore{}
	for id, st := range stores {
		counted[id] = &countingStore{flakyStore: st}
	}
	c2 := testClient(t, svc, counted, Config{})
	cur, _ := svc.GetAttr(ctx, in.Ino)
	rh, _, _ := c2.Open(ctx, cur, 0)
	defer rh.Release(ctx)
	buf := make([]byte, len(data))
	if n, err := rh.Read(ctx, 0, buf); err != nil || n != len(data) || !bytes.Equal(buf, data) {
		t.Fatalf("read of a block on the second candidate: n=%d err=%v", n, err)
	}
	for id, st := range counted {
		gets := st.count()
		want := 0
		switch id {
		case cands[1]:
			want = 1
		case cands[0]:
			want = gets // at most one miss (asked at once with R=1), checked below
			if want > 1 {
				t.Fatalf("%d gets on the first candidate %s, want at most one miss", gets, id)
			}
		}
		if gets != want {
			t.Fatalf("server %s answered %d gets, want %d", id, gets, want)
		}
	}
}

// The reader asks the block's candidates before the other servers, least
// busy first, local copies before all.
func TestRankedOrder(t *testing.T) {
	_, c, _ := newReplicaEnv(t, 6, 2)
	h := block.Sum([]byte("x"))
	cands := candidatesOf(c, h, 2)
	got := c.router.ranked(h)
	if len(got) != 6 {
		t.Fatalf("ranked %d servers, want 6", len(got))
	}
	ids := func(rs []rankedStore) []string {
		var out []string
		for _, s := range rs {
			out = append(out, s.id)
		}
		return out
	}
	if !slices.Equal(ids(got[:3]), cands) {
		t.Fatalf("ranked starts %v, want the candidates %v", ids(got[:3]), cands)
	}
	c.router.mu.lanes[cands[0]].busy.Add(3)
	defer c.router.mu.lanes[cands[0]].busy.Add(-3)
	got = c.router.ranked(h)
	if want := []string{cands[1], cands[2], cands[0]}; !slices.Equal(ids(got[:3]), want) {
		t.Fatalf("with %s busy, ranked starts %v, want %v", cands[0], ids(got[:3]), want)
	}
}

func TestAutoReadAhead(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		servers  int
		bs, mem  int64
		want     int
		describe string
	}{
		{1, 4 * mib, 128 * mib, 8, "floor of 8"},
		{8, 4 * mib, 512 * mib, 48, "6 per server"},
		{8, 4 * mib, 128 * mib, 24, "3/4 of 128 MiB is 24 blocks"},
		{20, 4 * mib, 256 * mib, 48, "capped by memory"},
		{20, 64 << 10, 128 * mib, 120, "small blocks"},
		{4, 64 * mib, 64 * mib, 1, "at least one"},
	} {
		if got := autoReadAhead(tc.servers, tc.bs, tc.mem); got != tc.want {
			t.Errorf("%s: autoReadAhead(%d, %d, %d) = %d, want %d", tc.describe, tc.servers, tc.bs, tc.mem, got, tc.want)
		}
	}
}

func testHashes(n int) []block.Hash {
	out := make([]block.Hash, n)
	for i := range out {
		out[i] = block.Sum([]byte{byte(i), byte(i >> 8), 'h'})
	}
	return out
}

// A demoted block is evicted first, before blocks inserted earlier.
func TestMemCacheDemote(t *testing.T) {
	c := newMemCache(3 * 10)
	hs := testHashes(4)
	put := func(h block.Hash) { // as a fetch does
		b := newBlockBuf(make([]byte, 10), false, nil)
		c.put(h, b)
		b.release()
	}
	for _, h := range hs[:3] {
		put(h)
	}
	c.demote(hs[2]) // the newest goes to the back
	put(hs[3])
	if c.contains(hs[2]) {
		t.Fatal("the demoted block survived the eviction")
	}
	for _, h := range []block.Hash{hs[0], hs[1], hs[3]} {
		if !c.contains(h) {
			t.Fatalf("block %s evicted instead of the demoted one", h.Short())
		}
	}
	c.demote(hs[2]) // absent: no effect
}

// A sequential reader demotes each block it has read to its end, so the
// memory cache keeps the read-ahead rather than the blocks behind the
// reader: with read-ahead as deep as the cache allows, every block is
// fetched once.
func TestSequentialReadFetchesEachBlockOnce(t *testing.T) {
	testReadFetchesEachBlockOnce(t, func(i int) int { return i })
}

// The kernel sends a sequential reader's reads a few at a time and they
// arrive out of order: the end of a block before its middle, and the next
// block's start before it too, must not get the block evicted (demoted)
// before its middle is read.
func TestOutOfOrderSequentialReadFetchesEachBlockOnce(t *testing.T) {
	late := []int{0, 1, 3, 4, 5, 2, 6, 7} // chunk 2 of each even block comes late
	testReadFetchesEachBlockOnce(t, func(i int) int { return i - i%8 + late[i%8] })
}

// testReadFetchesEachBlockOnce reads a file through a small cache in chunks
// of a quarter block, chunk order(i) as the i-th read, and checks each block
// was fetched once.
func testReadFetchesEachBlockOnce(t *testing.T, order func(int) int) {
	ctx := context.Background()
	svc, c, stores := newReplicaEnv(t, 2, 1)
	in, _ := svc.Create(ctx, meta.CreateReq{Parent: meta.RootIno, Name: "f", Mode: 0o100644})
	const bs, nblocks = 64 << 10, 12
	data := make([]byte, nblocks*bs)
	for i := range data {
		data[i] = byte(i/bs + 1)
	}
	h, _, _ := c.Open(ctx, in, 0)
	h.Write(ctx, 0, data)
	if err := h.Fsync(ctx); err != nil {
		t.Fatal(err)
	}
	h.Release(ctx)

	counted := map[string]*countingStore{}
	for id, st := range stores {
		counted[id] = &countingStore{flakyStore: st}
	}
	// A cache of 5 blocks, read-ahead of 3.
	c2 := testClient(t, svc, counted, Config{MemCacheBytes: 5 * bs, ReadAheadBlocks: 3})
	cur, _ := svc.GetAttr(ctx, in.Ino)
	rh, _, _ := c2.Open(ctx, cur, 0)
	defer rh.Release(ctx)
	buf := make([]byte, bs/4)
	for i := range nblocks * 4 {
		off := int64(order(i)) * int64(len(buf))
		if _, err := rh.Read(ctx, off, buf); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(buf, data[off:off+int64(len(buf))]) {
			t.Fatalf("wrong bytes at %d", off)
		}
		c2.bg.Wait() // read-ahead lands before the next read
	}
	hits := 0
	for _, st := range counted {
		hits += st.count() // each block is on one server; misses cost a get too
	}
	// Each block: one hit, plus at most one miss on its other candidate.
	var found int
	for _, st := range stores {
		for i := range nblocks {
			if st.holds(block.Sum(data[i*bs : (i+1)*bs])) {
				found++
			}
		}
	}
	if found != nblocks || hits > 2*nblocks {
		t.Fatalf("%d gets for %d blocks (%d copies): blocks fetched more than once", hits, nblocks, found)
	}
}

// hangingStore never answers a Get until its context ends.
type hangingStore struct{ *flakyStore }

func (s hangingStore) Get(ctx context.Context, h block.Hash) ([]byte, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// With R=1 a reader asks both candidates at once: a first candidate that
// is slow to answer (its link full) does not hold up the read of a copy on
// the second, and its request is cancelled.
func TestReadAsksBothCandidates(t *testing.T) {
	ctx := context.Background()
	_, c, stores := newReplicaEnv(t, 4, 1)
	data := bytes.Repeat([]byte("both"), 1000)
	bh := block.Sum(data)
	cands := candidatesOf(c, bh, 1)
	if err := stores[cands[1]].Put(ctx, bh, data); err != nil {
		t.Fatal(err)
	}
	dial := func(s meta.Server) (block.Store, error) {
		if s.ID == cands[0] {
			return hangingStore{stores[s.ID]}, nil
		}
		return stores[s.ID], nil
	}
	c2, err := New(ctx, Config{Meta: c.api, Dial: dial, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close(ctx)
	got, _, _, err := c2.router.get(ctx, bh, nil)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("get with the first candidate hanging: err=%v", err)
	}
	// The hanging request was cancelled: its lane empties.
	l := c2.router.mu.lanes[cands[0]]
	for i := 0; l.busy.Load() != 0; i++ {
		if i == 200 {
			t.Fatalf("the request to the first candidate was not cancelled")
		}
		sleepBriefly()
	}
}
