package cachetier

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"tessera/internal/block"
	"tessera/internal/block/blocktest"
	"tessera/internal/cachetier/memcache"
	"tessera/internal/cachetier/memcache/mctest"
)

// TestDistribution stores blocks through a pool of two servers and counts,
// with a client of each server, where they went.
func TestDistribution(t *testing.T) {
	srvs := startServers(t, 2)
	p := newPool(t, srvs, Options{})
	ctx := context.Background()
	const n = 1000
	keys := make([]string, n)
	for i := range n {
		d := blocktest.Data(uint64(i), 64)
		h := block.Sum(d)
		keys[i] = headerKey(h)
		if err := p.SetBlock(ctx, h, d); err != nil {
			t.Fatal(err)
		}
	}
	total := 0
	for _, srv := range srvs {
		c := memcache.New(srv.Addr, memcache.Options{})
		items, err := c.Get(ctx, keys...)
		c.Close()
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s holds %d of %d blocks", srv.Addr, len(items), n)
		if len(items) < n*4/10 || len(items) > n*6/10 {
			t.Errorf("%s holds %d of %d blocks, want about half", srv.Addr, len(items), n)
		}
		total += len(items)
	}
	if total != n {
		t.Errorf("the servers hold %d blocks in all, want %d (each on exactly one)", total, n)
	}
}

// TestRendezvous checks the properties the package doc claims for server
// choice: independent of the order of the servers, and removing one moves
// only its own keys.
func TestRendezvous(t *testing.T) {
	pool := func(addrs ...string) *Pool {
		p, err := New(addrs, Options{})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	abc := pool("a:1", "b:1", "c:1")
	cba := pool("c:1", "b:1", "a:1")
	ac := pool("a:1", "c:1")
	counts := map[string]int{}
	for i := range 30000 {
		k := mix64(uint64(i))
		s := abc.pick(k).addr
		counts[s]++
		if o := cba.pick(k).addr; o != s {
			t.Fatalf("key %d: %s in one order, %s in another", i, s, o)
		}
		if s != "b:1" && ac.pick(k).addr != s {
			t.Fatalf("key %d moved from %s when b:1 left", i, s)
		}
	}
	for a, n := range counts {
		if n < 9000 || n > 11000 {
			t.Errorf("%s gets %d of 30000 keys", a, n)
		}
	}
}

func TestAttrCache(t *testing.T) {
	srvs := startServers(t, 2)
	p := newPool(t, srvs, Options{})
	ctx := context.Background()

	if _, ok := p.GetAttr(ctx, 7, 1); ok {
		t.Fatal("hit on an empty tier")
	}
	for change := uint64(1); change <= 3; change++ {
		if err := p.SetAttr(ctx, 7, change, []byte("attrs at "+strconv.FormatUint(change, 10))); err != nil {
			t.Fatal(err)
		}
	}
	// Every change counter is its own key: no invalidation needed.
	for change := uint64(1); change <= 3; change++ {
		v, ok := p.GetAttr(ctx, 7, change)
		if want := "attrs at " + strconv.FormatUint(change, 10); !ok || string(v) != want {
			t.Fatalf("GetAttr(7, %d) = %q, %v; want %q", change, v, ok, want)
		}
	}
	if _, ok := p.GetAttr(ctx, 7, 4); ok {
		t.Fatal("hit for a change counter never stored")
	}
	if _, ok := p.GetAttr(ctx, 8, 1); ok {
		t.Fatal("hit for another inode")
	}
	if err := p.SetAttr(ctx, 7, 5, []byte{}); err != nil {
		t.Fatal(err)
	}
	if v, ok := p.GetAttr(ctx, 7, 5); !ok || len(v) != 0 {
		t.Fatalf("empty value: %q, %v", v, ok)
	}
	if err := p.SetAttr(ctx, 7, 6, make([]byte, MaxAttrSize+1)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("SetAttr of %d bytes: %v", MaxAttrSize+1, err)
	}

	// Another file system's pool on the same servers sees none of it.
	other := newPool(t, srvs, Options{Namespace: "fs2"})
	if _, ok := other.GetAttr(ctx, 7, 1); ok {
		t.Fatal("namespace fs2 sees the default namespace's attributes")
	}
	if k := other.attrKey(7, 1); k != "ta:fs2:7:1" {
		t.Fatalf("key %q", k)
	}

	// A damaged item is a miss, not wrong bytes.
	key := p.attrKey(7, 2)
	s := p.attrServer(key)
	items, err := s.client.Get(ctx, key)
	if err != nil || len(items) != 1 {
		t.Fatal(items, err)
	}
	v := items[0].Value
	v[len(v)-1] ^= 1
	if err := s.client.Set(ctx, memcache.Item{Key: key, Value: v}); err != nil {
		t.Fatal(err)
	}
	if got, ok := p.GetAttr(ctx, 7, 2); ok {
		t.Fatalf("damaged attribute item served: %q", got)
	}
	// So is an item stored under the key of another inode.
	if err := s.client.Set(ctx, memcache.Item{Key: key, Value: items[0].Value}); err != nil {
		t.Fatal(err)
	}
	good, _ := p.attrServer(p.attrKey(7, 3)).client.Get(ctx, p.attrKey(7, 3))
	if err := s.client.Set(ctx, memcache.Item{Key: key, Value: good[0].Value}); err != nil {
		t.Fatal(err)
	}
	if got, ok := p.GetAttr(ctx, 7, 2); ok {
		t.Fatalf("item of change 3 served for change 2: %q", got)
	}
	st := p.Stats()
	if st.AttrHits != 4 || st.AttrMisses != 5 {
		t.Fatalf("attr stats %+v", st)
	}
}

// TestRecovery: a server that was down is probed after the back-off (on an
// injected clock) and used again once it answers.
func TestRecovery(t *testing.T) {
	port, err := mctest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	var clock struct {
		sync.Mutex
		now time.Time
	}
	clock.now = time.Unix(1_000_000, 0)
	now := func() time.Time { clock.Lock(); defer clock.Unlock(); return clock.now }
	advance := func(d time.Duration) { clock.Lock(); clock.now = clock.now.Add(d); clock.Unlock() }

	p, err := New([]string{addr}, Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	next := newMemStore()
	c := newCache(t, p, next)
	ctx := context.Background()
	d := blocktest.Data(7, 1<<20)
	h := block.Sum(d)
	next.Put(ctx, h, d)

	mustGet(t, c, h, d) // nothing listens: refused, marked down
	if st := p.Stats(); !st.Servers[0].Down || st.Servers[0].Errors != 1 {
		t.Fatalf("server not down after a refused connection: %+v", st.Servers[0])
	}
	mctest.Start(t, mctest.Options{Port: port})
	mustGet(t, c, h, d)
	if st := p.Stats(); st.Servers[0].Skipped != 1 { // the lookup (the fill is not even queued)
		t.Fatalf("down server not skipped: %+v", st.Servers[0])
	}
	advance(2 * time.Second)
	mustGet(t, c, h, d) // the probe: a miss that brings the server up, then a fill
	drain(t, c)
	if st := p.Stats(); st.Servers[0].Down {
		t.Fatalf("server still down after a good probe: %+v", st.Servers[0])
	}
	gets := next.gets.Load()
	mustGet(t, c, h, d)
	if next.gets.Load() != gets {
		t.Fatal("no hit after recovery")
	}
}

func TestParseHeader(t *testing.T) {
	const maxChunk = 1 << 20
	for _, hd := range []header{{size: 0}, {size: 5}, {size: 10, chunkSize: 4, chunks: 3}, {size: MaxBlockSize, chunkSize: 512 << 10, chunks: 128}} {
		v := appendHeader(nil, hd)
		if hd.chunks == 0 {
			v = append(v, make([]byte, hd.size)...)
		}
		got, inline, err := parseHeader(v, maxChunk)
		if err != nil || got != hd || len(inline) != map[bool]int{true: hd.size}[hd.chunks == 0] {
			t.Errorf("header %+v: got %+v, %d inline bytes, %v", hd, got, len(inline), err)
		}
	}
	for _, hd := range []header{{size: 10, chunkSize: 4, chunks: 2}, {size: 10, chunkSize: 0, chunks: 1},
		{size: 10, chunkSize: maxChunk + 1, chunks: 1}, {size: MaxBlockSize + 1, chunkSize: 1 << 20, chunks: 65}, {size: 0, chunkSize: 4, chunks: 1}} {
		if _, _, err := parseHeader(appendHeader(nil, hd), maxChunk); err == nil {
			t.Errorf("header %+v accepted", hd)
		}
	}
}

// FuzzParseHeader: any header item either parses into a consistent header
// or is an error.
func FuzzParseHeader(f *testing.F) {
	f.Add(appendHeader(nil, header{size: 3}))
	f.Add(append(appendHeader(nil, header{size: 3}), "abc"...))
	f.Add(appendHeader(nil, header{size: 4 << 20, chunkSize: 512 << 10, chunks: 8}))
	f.Add([]byte("TCB1"))
	f.Fuzz(func(t *testing.T, v []byte) {
		hd, inline, err := parseHeader(v, 1<<20)
		if err != nil {
			return
		}
		if hd.size < 0 || hd.size > MaxBlockSize {
			t.Fatalf("size %d", hd.size)
		}
		if hd.chunks == 0 && len(inline) != hd.size {
			t.Fatalf("inline %d bytes for size %d", len(inline), hd.size)
		}
		if hd.chunks > 0 && (hd.chunkSize <= 0 || hd.chunkSize > 1<<20 || (hd.chunks-1)*hd.chunkSize >= hd.size || hd.chunks*hd.chunkSize < hd.size) {
			t.Fatalf("inconsistent %+v", hd)
		}
	})
}

func TestKeys(t *testing.T) {
	h := block.Sum([]byte("x"))
	if got, want := headerKey(h), "tb:"+h.String(); got != want {
		t.Errorf("header key %q, want %q", got, want)
	}
	if got, want := chunkKeys(h, 3)[2], fmt.Sprintf("tb:%s:2", h); got != want {
		t.Errorf("chunk key %q, want %q", got, want)
	}
	p, _ := New([]string{"a:1"}, Options{})
	if k := p.attrKey(12, 34); k != "ta:12:34" {
		t.Errorf("attr key %q", k)
	}
	for _, k := range []string{headerKey(h), chunkKeys(h, 100000)[99999], p.attrKey(^uint64(0), ^uint64(0))} {
		if err := memcache.CheckKey(k); err != nil {
			t.Error(err)
		}
	}
}
