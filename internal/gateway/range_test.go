package gateway_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"tessera/internal/block"
	"tessera/internal/client"
	"tessera/internal/gateway"
	"tessera/internal/gateway/home"
	"tessera/internal/meta"
)

// countingHome counts the bytes read from a home store and can be taken
// down (every read fails), as a WAN outage would.
type countingHome struct {
	home.Store
	read *atomic.Int64
	down *atomic.Bool
}

var errHomeDown = errors.New("home is down (test)")

func (c countingHome) ReadAt(ctx context.Context, path string, p []byte, off int64) (int, error) {
	if c.down.Load() {
		return 0, errHomeDown
	}
	n, err := c.Store.ReadAt(ctx, path, p, off)
	c.read.Add(int64(n))
	return n, err
}

// rangeEnv is an env whose gateways (n of them, one data-path client
// each over the env's block store) read home through a countingHome.
type rangeEnv struct {
	*env
	grp  *gateway.Group
	read atomic.Int64
	down atomic.Bool
}

func newRangeEnv(t *testing.T, prefetch string, n int) *rangeEnv {
	t.Helper()
	r := &rangeEnv{}
	open := func(ctx context.Context, url string) (home.Store, error) {
		s, err := home.Open(ctx, url)
		if err != nil {
			return nil, err
		}
		return countingHome{Store: s, read: &r.read, down: &r.down}, nil
	}
	r.env = newEnvPrefetch(t, meta.ModeRO, prefetch, gateway.Options{Open: open})
	gs := []*gateway.Ingester{r.g}
	for range n - 1 {
		c, err := client.New(context.Background(), client.Config{Meta: r.svc,
			Dial:   func(meta.Server) (block.Store, error) { return r.st, nil },
			Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close(context.Background()) })
		gs = append(gs, gateway.NewIngester(r.svc, c, gateway.Options{Open: open, Chunk: 100 << 10}))
	}
	r.grp = gateway.NewGroup(gs...)
	r.grp.RangeSize = 256 << 10 // 4 blocks of 64 KiB
	r.grp.Window = 256 << 10
	t.Cleanup(func() { r.grp.Close() })
	return r
}

// file puts a home file of size bytes, lists the fileset root and
// returns the file's placeholder and its content.
func (r *rangeEnv) file(t *testing.T, size int) (meta.Inode, []byte) {
	t.Helper()
	data := randBytes(size, 7)
	r.put(t, "big", data)
	ctx := context.Background()
	if _, err := r.grp.ListDir(ctx, r.root); err != nil {
		t.Fatal(err)
	}
	in, err := r.svc.Lookup(ctx, r.root, "big")
	if err != nil {
		t.Fatal(err)
	}
	return in, data
}

// readAt reads n bytes at off through the env's client.
func (r *rangeEnv) readAt(t *testing.T, ino meta.Ino, off int64, n int) []byte {
	t.Helper()
	ctx := context.Background()
	in, err := r.svc.GetAttr(ctx, ino)
	if err != nil {
		t.Fatal(err)
	}
	h, _, err := r.data.Open(ctx, in, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release(ctx)
	buf := make([]byte, n)
	k, err := h.Read(ctx, off, buf)
	if err != nil {
		t.Fatal(err)
	}
	return buf[:k]
}

func idle(t *testing.T, g *gateway.Group) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := g.Idle(ctx); err != nil {
		t.Fatal(err)
	}
}

const bs = 64 << 10 // the env's block size

// TestRangedMissFetchesOnlyItsBlocks: with prefetch none, a 4 KiB read
// in the middle of a 64 MiB home file (the 1 GiB, kept small for
// CI) fetches the one block holding it, records it in the inode's cached
// runs, and reads home's bytes; asking again reads nothing from home.
func TestRangedMissFetchesOnlyItsBlocks(t *testing.T) {
	r := newRangeEnv(t, meta.PrefetchNone, 3)
	const size = 64 << 20
	in, data := r.file(t, size)
	ctx := context.Background()
	const mid = size/2 + 1000
	out, err := r.grp.Fetch(ctx, in.Ino, mid, 4096)
	if err != nil {
		t.Fatal(err)
	}
	idle(t, r.grp)
	if got := r.read.Load(); got != bs {
		t.Errorf("home bytes read for a 4 KiB miss: %d, want one block (%d)", got, bs)
	}
	b := uint64(mid / bs)
	if g := out.Gateway; g.State != meta.CachePartial || len(g.Cached) != 1 || g.Cached[0] != (meta.BlockRange{First: b, End: b + 1}) {
		t.Errorf("section after the miss: %v %v, want partial [%d,%d)", g.State, g.Cached, b, b+1)
	}
	if out.Size != size {
		t.Errorf("size of the partial file: %d, want home's %d", out.Size, size)
	}
	if got := r.readAt(t, in.Ino, mid, 4096); !bytes.Equal(got, data[mid:mid+4096]) {
		t.Errorf("the fetched range differs from home's")
	}
	if _, err := r.grp.Fetch(ctx, in.Ino, mid+100, 100); err != nil {
		t.Fatal(err)
	}
	if got := r.read.Load(); got != bs {
		t.Errorf("home bytes after a second fetch of a cached range: %d, want still %d", got, bs)
	}
	// A read crossing two blocks fetches the missing second one only.
	if _, err := r.grp.Fetch(ctx, in.Ino, int64(b+1)*bs-10, 20); err != nil {
		t.Fatal(err)
	}
	if got := r.read.Load(); got != 2*bs {
		t.Errorf("home bytes after a read into the next block: %d, want %d", got, 2*bs)
	}
}

// TestConcurrentMissesShareOneFetch: eight readers missing the same
// block make one home read of it.
func TestConcurrentMissesShareOneFetch(t *testing.T) {
	r := newRangeEnv(t, meta.PrefetchNone, 2)
	in, data := r.file(t, 4<<20)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := r.grp.Fetch(context.Background(), in.Ino, int64(3*bs+i*100), 100)
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := r.read.Load(); got != bs {
		t.Errorf("home bytes for 8 concurrent misses of one block: %d, want %d", got, bs)
	}
	if got := r.readAt(t, in.Ino, 3*bs, bs); !bytes.Equal(got, data[3*bs:4*bs]) {
		t.Errorf("the shared block differs from home's")
	}
}

// TestPrefetchRangeAndWhole: prefetch range fetches the window after the
// miss in the background; prefetch whole fetches the rest of the file,
// split among the gateways, and the file ends cached and equal to home's.
func TestPrefetchRangeAndWhole(t *testing.T) {
	t.Run("range", func(t *testing.T) {
		r := newRangeEnv(t, meta.PrefetchRange, 1)
		in, data := r.file(t, 4<<20)
		if _, err := r.grp.Fetch(context.Background(), in.Ino, 0, 10); err != nil {
			t.Fatal(err)
		}
		idle(t, r.grp)
		if got := r.read.Load(); got != bs+256<<10 {
			t.Errorf("home bytes after a miss with prefetch range: %d, want the block and the window (%d)", got, bs+256<<10)
		}
		out, _ := r.svc.GetAttr(context.Background(), in.Ino)
		if g := out.Gateway; len(g.Cached) != 1 || g.Cached[0] != (meta.BlockRange{First: 0, End: 5}) {
			t.Errorf("runs after the window: %v, want [0,5)", g.Cached)
		}
		if got := r.readAt(t, in.Ino, 0, 5*bs); !bytes.Equal(got, data[:5*bs]) {
			t.Errorf("the window differs from home's")
		}
	})
	t.Run("whole", func(t *testing.T) {
		r := newRangeEnv(t, meta.PrefetchWhole, 3)
		const size = 8<<20 + 123
		in, data := r.file(t, size)
		if _, err := r.grp.Fetch(context.Background(), in.Ino, 5<<20, 10); err != nil {
			t.Fatal(err)
		}
		idle(t, r.grp)
		out, _ := r.svc.GetAttr(context.Background(), in.Ino)
		if out.Gateway.State != meta.CacheCached || out.Gateway.Cached != nil {
			t.Errorf("after prefetch whole: %v %v, want cached", out.Gateway.State, out.Gateway.Cached)
		}
		if got := r.read.Load(); got != size {
			t.Errorf("home bytes: %d, want the file once (%d)", got, size)
		}
		for i, s := range r.grp.Stats() {
			if s.Ranges == 0 {
				t.Errorf("gateway %d fetched no piece of the whole file", i)
			}
		}
		if got := r.readAt(t, in.Ino, 0, size+10); !bytes.Equal(got, data) {
			t.Errorf("the prefetched file differs from home's")
		}
	})
}

// TestMissWithHomeDownFails: a miss with home unreachable fails and
// records nothing: the range stays uncached (a reader must never be
// handed the recipe's zeros as data).
func TestMissWithHomeDownFails(t *testing.T) {
	r := newRangeEnv(t, meta.PrefetchNone, 2)
	in, data := r.file(t, 2<<20)
	ctx := context.Background()
	if _, err := r.grp.Fetch(ctx, in.Ino, 0, 100); err != nil {
		t.Fatal(err)
	}
	r.down.Store(true)
	if _, err := r.grp.Fetch(ctx, in.Ino, 10*bs, 100); !errors.Is(err, errHomeDown) {
		t.Fatalf("a miss with home down: %v, want its error", err)
	}
	out, _ := r.svc.GetAttr(ctx, in.Ino)
	if out.Gateway.Holds(10, 11) {
		t.Errorf("block 10 recorded cached after a failed fetch: %v", out.Gateway.Cached)
	}
	// What was cached is served with home down.
	if _, err := r.grp.Fetch(ctx, in.Ino, 0, 100); err != nil {
		t.Errorf("a cached range with home down: %v", err)
	}
	r.down.Store(false)
	if _, err := r.grp.Fetch(ctx, in.Ino, 10*bs, 100); err != nil {
		t.Fatal(err)
	}
	if got := r.readAt(t, in.Ino, 10*bs, 100); !bytes.Equal(got, data[10*bs:10*bs+100]) {
		t.Errorf("block 10 after home returned differs from home's")
	}
}

// TestRevalidatePartialFile: a partly cached file that changed at home is
// invalidated whole: its cached runs go with its bytes, and the next
// fetch reads home's new content.
func TestRevalidatePartialFile(t *testing.T) {
	r := newRangeEnv(t, meta.PrefetchNone, 1)
	in, _ := r.file(t, 1<<20)
	ctx := context.Background()
	if _, err := r.grp.Fetch(ctx, in.Ino, 3*bs, 10); err != nil {
		t.Fatal(err)
	}
	v2 := randBytes(1<<20+5, 8)
	r.put(t, "big", v2)
	changed, err := r.grp.Revalidate(ctx, in.Ino, true)
	if err != nil || !changed {
		t.Fatalf("revalidate of a partial file changed at home: %v, %v", changed, err)
	}
	out, _ := r.svc.GetAttr(ctx, in.Ino)
	if g := out.Gateway; g.State != meta.CachePlaceholder || g.Cached != nil || out.Size != 1<<20+5 {
		t.Errorf("after revalidation: %v %v size %d, want a placeholder of the new size, no runs", g.State, g.Cached, out.Size)
	}
	if _, err := r.grp.Fetch(ctx, in.Ino, 3*bs, 10); err != nil {
		t.Fatal(err)
	}
	if got := r.readAt(t, in.Ino, 3*bs, 10); !bytes.Equal(got, v2[3*bs:3*bs+10]) {
		t.Errorf("the range after revalidation is not home's new content")
	}
}

// TestScatteredReadsFetchWhole: a file read at more scattered places than
// its gateway section records (meta.MaxCachedRanges runs) is fetched whole
// in the background, and every read meanwhile gets home's bytes.
func TestScatteredReadsFetchWhole(t *testing.T) {
	r := newRangeEnv(t, meta.PrefetchNone, 2)
	const runs = meta.MaxCachedRanges + 1
	size := (2*runs + 10) * bs
	in, data := r.file(t, size)
	ctx := context.Background()
	for i := range runs {
		off := int64(2*i) * bs
		if _, err := r.grp.Fetch(ctx, in.Ino, off, 10); err != nil {
			t.Fatalf("fetch %d: %v", i, err)
		}
	}
	last := int64(2*(runs-1)) * bs
	if got := r.readAt(t, in.Ino, last, 10); !bytes.Equal(got, data[last:last+10]) {
		t.Errorf("the read past the runs' capacity differs from home's")
	}
	idle(t, r.grp)
	out, _ := r.svc.GetAttr(ctx, in.Ino)
	if out.Gateway.State != meta.CacheCached {
		t.Fatalf("after %d scattered reads and the whole fetch: %v with %d runs, want cached", runs, out.Gateway.State, len(out.Gateway.Cached))
	}
	if got := r.readAt(t, in.Ino, 0, size+10); !bytes.Equal(got, data) {
		t.Errorf("the file fetched whole differs from home's")
	}
}
