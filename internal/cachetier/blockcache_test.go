package cachetier

import (
	"bytes"
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"tessera/internal/block"
	"tessera/internal/block/blocktest"
	"tessera/internal/cachetier/memcache"
	"tessera/internal/clock"
)

func TestConformance(t *testing.T) {
	srvs := startServers(t, 2)
	p := newPool(t, srvs, Options{})
	blocktest.Run(t, func(t *testing.T) block.Store {
		for _, s := range p.servers { // blocks of earlier subtests must not answer
			if err := s.client.FlushAll(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		return newCache(t, p, newMemStore())
	})
}

// TestRoundTrip stores blocks of many sizes, up to 4 MiB and across the
// chunk boundaries, and checks that the second Get is served by the tier.
func TestRoundTrip(t *testing.T) {
	srvs := startServers(t, 2)
	p := newPool(t, srvs, Options{})
	next := newMemStore()
	c := newCache(t, p, next)
	ctx := context.Background()
	cs := p.opts.ChunkSize
	sizes := []int{0, 1, 4 << 10, cs - 1, cs, cs + 1, 1 << 20, 4<<20 - 1, 4 << 20, 4<<20 + 3}
	var hs []block.Hash
	for i, n := range sizes {
		d := blocktest.Data(uint64(i), n)
		h := block.Sum(d)
		hs = append(hs, h)
		if err := c.Put(ctx, h, d); err != nil {
			t.Fatal(err)
		}
		mustGet(t, c, h, d) // miss: from next, then a fill
	}
	drain(t, c)
	if got := next.gets.Load(); got != int64(len(sizes)) {
		t.Fatalf("%d Gets reached next, want %d", got, len(sizes))
	}
	for i, n := range sizes {
		mustGet(t, c, hs[i], blocktest.Data(uint64(i), n))
	}
	if got := next.gets.Load(); got != int64(len(sizes)) {
		t.Fatalf("after the second round %d Gets reached next, want still %d", got, len(sizes))
	}
	st := c.Stats()
	if st.Hits != uint64(len(sizes)) || st.Misses != uint64(len(sizes)) || st.Fills != uint64(len(sizes)) || st.Errors != 0 || st.Corrupt != 0 {
		t.Fatalf("stats %+v", st)
	}
	// A 4 MiB block is 8 chunk items plus the header.
	h4 := hs[8]
	s := p.pick(keyHash(h4))
	items, err := s.client.Get(ctx, append(chunkKeys(h4, 9), headerKey(h4))...)
	if err != nil || len(items) != 9 || len(items[8].Value) != headerSize {
		t.Fatalf("items of a 4 MiB block: %d, %v", len(items), err)
	}

	// Lookup and Fill for callers that manage the tier themselves.
	d := blocktest.Data(99, 3<<20)
	h := block.Sum(d)
	if _, ok := c.Lookup(ctx, h); ok {
		t.Fatal("Lookup of a block never stored: hit")
	}
	if !c.Fill(h, d) {
		t.Fatal("Fill not queued")
	}
	drain(t, c)
	if got, ok := c.Lookup(ctx, h); !ok || !bytes.Equal(got, d) {
		t.Fatalf("Lookup after Fill: %d bytes, %v", len(got), ok)
	}
}

func keyHash(h block.Hash) uint64 {
	var k uint64
	for i := 7; i >= 0; i-- {
		k = k<<8 | uint64(h[i])
	}
	return k
}

func TestFillOnPut(t *testing.T) {
	srvs := startServers(t, 1)
	p := newPool(t, srvs, Options{})
	next := newMemStore()
	c := newCache(t, p, next, FillOnPut(true))
	d := blocktest.Data(1, 100<<10)
	h := block.Sum(d)
	if err := c.Put(context.Background(), h, d); err != nil {
		t.Fatal(err)
	}
	drain(t, c)
	mustGet(t, c, h, d)
	if next.gets.Load() != 0 {
		t.Fatal("Get after a filling Put reached next")
	}
}

// TestCorruptItems damages the items of a stored block in memcached, with
// our own client: every kind of damage must be a miss, and Get must return
// the right bytes from next (and refill the tier).
func TestCorruptItems(t *testing.T) {
	srvs := startServers(t, 2)
	p := newPool(t, srvs, Options{})
	next := newMemStore()
	c := newCache(t, p, next)
	ctx := context.Background()

	for _, tc := range []struct {
		name    string
		size    int
		damage  func(s *server, h block.Hash) error
		corrupt bool // counted as corrupt (rather than a plain miss)
	}{
		{"flipped chunk", 4 << 20, func(s *server, h block.Hash) error {
			return s.client.Set(ctx, memcache.Item{Key: chunkKeys(h, 4)[3], Value: bytes.Repeat([]byte{0xA5}, p.opts.ChunkSize)})
		}, true},
		{"short chunk", 4 << 20, func(s *server, h block.Hash) error {
			return s.client.Set(ctx, memcache.Item{Key: chunkKeys(h, 8)[7], Value: []byte("torn")})
		}, true},
		{"missing chunk", 4 << 20, func(s *server, h block.Hash) error {
			_, err := s.client.Delete(ctx, chunkKeys(h, 1)[0])
			return err
		}, false},
		{"header of another size", 4 << 20, func(s *server, h block.Hash) error {
			return s.client.Set(ctx, memcache.Item{Key: headerKey(h), Value: appendHeader(nil, header{size: 4<<20 - 1, chunkSize: p.opts.ChunkSize, chunks: 8})})
		}, true},
		{"garbage header", 4 << 20, func(s *server, h block.Hash) error {
			return s.client.Set(ctx, memcache.Item{Key: headerKey(h), Value: []byte("not a header")})
		}, true},
		{"flipped inline", 10 << 10, func(s *server, h block.Hash) error {
			v := appendHeader(nil, header{size: 10 << 10})
			return s.client.Set(ctx, memcache.Item{Key: headerKey(h), Value: append(v, make([]byte, 10<<10)...)})
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := blocktest.Data(uint64(len(tc.name)), tc.size)
			h := block.Sum(d)
			if err := p.SetBlock(ctx, h, d); err != nil {
				t.Fatal(err)
			}
			next.Put(ctx, h, d)
			if err := tc.damage(p.pick(keyHash(h)), h); err != nil {
				t.Fatal(err)
			}
			before, gets := c.Stats(), next.gets.Load()
			mustGet(t, c, h, d)
			after := c.Stats()
			if next.gets.Load() != gets+1 || after.Misses != before.Misses+1 || after.Hits != before.Hits {
				t.Fatalf("damaged block served by the tier? stats %+v → %+v", before, after)
			}
			if tc.corrupt != (after.Corrupt == before.Corrupt+1) {
				t.Fatalf("corrupt count %d → %d", before.Corrupt, after.Corrupt)
			}
			// The miss refilled the tier.
			drain(t, c)
			if got, ok := c.Lookup(ctx, h); !ok || !bytes.Equal(got, d) {
				t.Fatal("block not refilled after the miss")
			}
		})
	}
}

// TestKillServer kills one memcached (by PID) while readers run: every Get
// must still return the right block, without error, and the dead server
// costs one failed operation per reader at most: then it is down and
// skipped. The back-off's clock stands still, so that no probe of the dead
// server comes due however long the rounds take on a busy machine (a Get
// bound of 1.5 s of wall time failed there).
func TestKillServer(t *testing.T) {
	srvs := startServers(t, 2)
	p := newPool(t, srvs, Options{Now: clock.NewFake(time.Now()).Now})
	next := newMemStore()
	c := newCache(t, p, next)
	ctx := context.Background()

	var blocks [][]byte
	var hs []block.Hash
	for i := range 24 {
		d := blocktest.Data(uint64(1000+i), (64<<10)<<(i%4)) // 64 KiB .. 512 KiB
		h := block.Sum(d)
		next.Put(ctx, h, d)
		if err := p.SetBlock(ctx, h, d); err != nil {
			t.Fatal(err)
		}
		blocks, hs = append(blocks, d), append(hs, h)
	}
	for i := range hs {
		mustGet(t, c, hs[i], blocks[i])
	}
	if st := c.Stats(); st.Hits != uint64(len(hs)) {
		t.Fatalf("warm-up: %+v", st)
	}

	var (
		wg      sync.WaitGroup
		killed  atomic.Bool
		rounds  atomic.Int64 // reader rounds completed after the kill
		slowest atomic.Int64
		errs    = make(chan error, 4)
		enough  = make(chan struct{})
		stop    = make(chan struct{})
	)
	for w := range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				for j := range hs {
					i := (j + w*5) % len(hs)
					start := time.Now()
					got, err := c.Get(ctx, hs[i])
					el := time.Since(start)
					if el > time.Duration(slowest.Load()) {
						slowest.Store(int64(el))
					}
					if err != nil || !bytes.Equal(got, blocks[i]) {
						errs <- errors.Join(errors.New("wrong Get after a kill"), err)
						return
					}
				}
				if killed.Load() && rounds.Add(1) == 12 {
					close(enough)
				}
			}
		})
	}
	time.Sleep(20 * time.Millisecond) // let the readers get going
	srvs[0].Kill()
	killed.Store(true)
	var failure error
	select {
	case failure = <-errs:
	case <-time.After(2 * time.Minute): // only a hang gets here
		failure = errors.New("readers did not finish 12 rounds in 2 minutes")
	case <-enough:
	}
	close(stop)
	wg.Wait()
	if failure != nil {
		t.Fatal(failure)
	}
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	st, ps := c.Stats(), p.Stats()
	t.Logf("after the kill: cache %+v; slowest Get %v", st, time.Duration(slowest.Load()))
	dead := ps.Servers[0]
	if !dead.Down || dead.Skipped == 0 || dead.Errors > 4 {
		t.Fatalf("killed server not marked down and skipped after at most one failure per reader: %+v", dead)
	}
	if ps.Servers[1].Down || ps.Servers[1].Errors != 0 {
		t.Fatalf("live server marked down or failing: %+v", ps.Servers[1])
	}
	if st.Hits <= uint64(len(hs)) {
		t.Fatalf("no hits from the live server after the kill: %+v", st)
	}
}

// TestDeadPool: a tier whose only server refuses connections or never
// answers costs nothing but hits.
func TestDeadPool(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hung := l.Addr().String() // accepts (backlog) but never answers
	t.Cleanup(func() { l.Close() })
	l2, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := l2.Addr().String()
	l2.Close()

	for _, addr := range []string{refused, hung} {
		// The back-off's clock stands still: the server stays down for
		// the 5 Gets however long they take (no probe comes due).
		p, err := New([]string{addr}, Options{Client: memcache.Options{OpTimeout: 100 * time.Millisecond}, Now: clock.NewFake(time.Now()).Now})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		next := newMemStore()
		c := newCache(t, p, next)
		d := blocktest.Data(5, 4<<20)
		h := block.Sum(d)
		next.Put(context.Background(), h, d)
		for range 5 {
			mustGet(t, c, h, d)
		}
		if st := c.Stats(); st.Hits != 0 || st.Misses != 5 || st.Errors != 1 {
			t.Errorf("%s: stats %+v, want 5 misses and 1 error (then skipped)", addr, st)
		}
		if _, ok := p.GetAttr(context.Background(), 1, 1); ok {
			t.Errorf("%s: attr hit", addr)
		}
		if err := p.SetAttr(context.Background(), 1, 1, []byte("x")); !errors.Is(err, ErrServerDown) {
			t.Errorf("%s: SetAttr on a down server: %v", addr, err)
		}
	}
}

func TestFillQueueBounds(t *testing.T) {
	srvs := startServers(t, 1)
	p := newPool(t, srvs, Options{})
	c := newCache(t, p, newMemStore(), FillQueue(4, 1000))
	d := blocktest.Data(1, 2000)
	if c.Fill(block.Sum(d), d) {
		t.Fatal("fill larger than the queue's byte bound was queued")
	}
	if st := c.Stats(); st.Dropped != 1 {
		t.Fatalf("stats %+v", st)
	}
	c.Close()
	d = blocktest.Data(1, 10)
	if c.Fill(block.Sum(d), d) {
		t.Fatal("fill queued after Close")
	}
	// Get still works after Close, without fills.
	mustGetErr(t, c, block.Sum(d), block.ErrNotFound)
}

func mustGetErr(t *testing.T, s block.Store, h block.Hash, want error) {
	t.Helper()
	if _, err := s.Get(context.Background(), h); !errors.Is(err, want) {
		t.Fatalf("Get %s: %v, want %v", h.Short(), err, want)
	}
}
