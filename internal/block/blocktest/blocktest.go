package blocktest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"tessera/internal/block"
)

// Ranger is the optional capability of reading part of a block (unverified).
type Ranger interface {
	GetRange(ctx context.Context, h block.Hash, off, n int64) ([]byte, error)
}

// Data returns n deterministic pseudo-random bytes drawn from seed.
func Data(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 0x7e55e7a))
	b := make([]byte, n)
	for i := 0; i+8 <= n; i += 8 {
		v := r.Uint64()
		for j := range 8 {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	for i := n &^ 7; i < n; i++ {
		b[i] = byte(r.Uint32())
	}
	return b
}

// Run runs the conformance suite against stores made by newStore.
func Run(t *testing.T, newStore func(t *testing.T) block.Store) {
	t.Run("PutGet", func(t *testing.T) { testPutGet(t, newStore(t)) })
	t.Run("GetMissing", func(t *testing.T) { testGetMissing(t, newStore(t)) })
	t.Run("HashMismatch", func(t *testing.T) { testHashMismatch(t, newStore(t)) })
	t.Run("PutTwice", func(t *testing.T) { testPutTwice(t, newStore(t)) })
	t.Run("Has", func(t *testing.T) { testHas(t, newStore(t)) })
	t.Run("Concurrent", func(t *testing.T) { testConcurrent(t, newStore(t)) })
	t.Run("Cancelled", func(t *testing.T) { testCancelled(t, newStore(t)) })
	t.Run("Model", func(t *testing.T) { testModel(t, newStore(t)) })
	t.Run("Range", func(t *testing.T) {
		r, ok := newStore(t).(interface {
			block.Store
			Ranger
		})
		if !ok {
			t.Skip("store has no GetRange")
		}
		testRange(t, r)
	})
	t.Run("Lister", func(t *testing.T) {
		l, ok := newStore(t).(interface {
			block.Store
			block.Lister
		})
		if !ok {
			t.Skip("store is not a block.Lister")
		}
		testLister(t, l)
	})
}

func put(t *testing.T, s block.Store, data []byte) block.Hash {
	t.Helper()
	h := block.Sum(data)
	if err := s.Put(context.Background(), h, data); err != nil {
		t.Fatalf("Put %s (%d bytes): %v", h.Short(), len(data), err)
	}
	return h
}

func mustGet(t *testing.T, s block.Store, h block.Hash, want []byte) {
	t.Helper()
	got, err := s.Get(context.Background(), h)
	if err != nil {
		t.Fatalf("Get %s: %v", h.Short(), err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("Get %s: got %d bytes, want %d (content differs)", h.Short(), len(got), len(want))
	}
}

func testPutGet(t *testing.T, s block.Store) {
	for i, n := range []int{0, 1, 1000, 64 << 10, 1<<20 + 3} {
		data := Data(uint64(i), n)
		h := put(t, s, data)
		mustGet(t, s, h, data)
	}
}

func testGetMissing(t *testing.T, s block.Store) {
	h := block.Sum([]byte("never stored"))
	_, err := s.Get(context.Background(), h)
	if !errors.Is(err, block.ErrNotFound) {
		t.Fatalf("Get of a missing block: got %v, want ErrNotFound", err)
	}
}

func testHashMismatch(t *testing.T, s block.Store) {
	h := block.Sum([]byte("the name"))
	err := s.Put(context.Background(), h, []byte("other content"))
	if !errors.Is(err, block.ErrHashMismatch) {
		t.Fatalf("Put under the wrong name: got %v, want ErrHashMismatch", err)
	}
	has, err := s.Has(context.Background(), []block.Hash{h})
	if err != nil || has[0] {
		t.Fatalf("after a rejected Put: Has = %v, %v; want false", has, err)
	}
}

func testPutTwice(t *testing.T, s block.Store) {
	data := Data(7, 5000)
	h := put(t, s, data)
	put(t, s, data)
	mustGet(t, s, h, data)
	if l, ok := s.(block.Lister); ok {
		checkUsage(t, l, 1, 5000)
	}
}

func testHas(t *testing.T, s block.Store) {
	ctx := context.Background()
	has, err := s.Has(ctx, nil)
	if err != nil || len(has) != 0 {
		t.Fatalf("Has(nil) = %v, %v; want empty", has, err)
	}
	var hs []block.Hash
	var want []bool
	for i := range 20 {
		data := Data(uint64(100+i), 100+i)
		if i%3 == 0 {
			put(t, s, data)
		}
		hs = append(hs, block.Sum(data))
		want = append(want, i%3 == 0)
	}
	has, err = s.Has(ctx, hs)
	if err != nil {
		t.Fatalf("Has: %v", err)
	}
	if !slices.Equal(has, want) {
		t.Fatalf("Has = %v, want %v", has, want)
	}
}

func testConcurrent(t *testing.T, s block.Store) {
	ctx := context.Background()
	shared := Data(1, 100<<10)
	const workers = 8
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := range 4 {
				for _, data := range [][]byte{shared, Data(uint64(1000+w*10+i), 10<<10)} {
					h := block.Sum(data)
					if err := s.Put(ctx, h, data); err != nil {
						errs <- err
						return
					}
					got, err := s.Get(ctx, h)
					if err != nil || !bytes.Equal(got, data) {
						errs <- fmt.Errorf("Get %s after Put: %d bytes, %v", h.Short(), len(got), err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if l, ok := s.(block.Lister); ok {
		checkUsage(t, l, 1+workers*4, 100<<10+workers*4*10<<10)
	}
}

func testCancelled(t *testing.T, s block.Store) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	data := Data(3, 100)
	h := block.Sum(data)
	if err := s.Put(ctx, h, data); !errors.Is(err, context.Canceled) {
		t.Errorf("Put with a cancelled context: got %v, want context.Canceled", err)
	}
	put(t, s, data)
	if _, err := s.Get(ctx, h); !errors.Is(err, context.Canceled) {
		t.Errorf("Get with a cancelled context: got %v, want context.Canceled", err)
	}
}

func testRange(t *testing.T, s interface {
	block.Store
	Ranger
}) {
	ctx := context.Background()
	data := Data(9, 10000)
	h := put(t, s, data)
	for _, c := range []struct{ off, n, want int64 }{
		{0, 10000, 10000}, {0, 1, 1}, {1234, 100, 100}, {9990, 100, 10}, {10000, 5, 0}, {50, 0, 0},
	} {
		got, err := s.GetRange(ctx, h, c.off, c.n)
		if err != nil {
			t.Errorf("GetRange(%d, %d): %v", c.off, c.n, err)
			continue
		}
		if !bytes.Equal(got, data[c.off:c.off+c.want]) {
			t.Errorf("GetRange(%d, %d): got %d bytes, want %d of the block", c.off, c.n, len(got), c.want)
		}
	}
	if _, err := s.GetRange(ctx, h, 10001, 1); err == nil {
		t.Errorf("GetRange past the end: no error")
	}
	if _, err := s.GetRange(ctx, block.Sum([]byte("missing")), 0, 1); !errors.Is(err, block.ErrNotFound) {
		t.Errorf("GetRange of a missing block: got %v, want ErrNotFound", err)
	}
}

func checkUsage(t *testing.T, l block.Lister, blocks, bytes int64) {
	t.Helper()
	b, n, err := l.Usage(context.Background())
	if err != nil || b != blocks || n != bytes {
		t.Fatalf("Usage = %d blocks, %d bytes, %v; want %d, %d", b, n, err, blocks, bytes)
	}
}

func list(t *testing.T, l block.Lister) map[block.Hash]block.Info {
	t.Helper()
	m := map[block.Hash]block.Info{}
	err := l.List(context.Background(), func(info block.Info) error {
		if _, dup := m[info.Hash]; dup {
			return fmt.Errorf("block %s listed twice", info.Hash.Short())
		}
		m[info.Hash] = info
		return nil
	})
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	return m
}

func testLister(t *testing.T, s interface {
	block.Store
	block.Lister
}) {
	ctx := context.Background()
	checkUsage(t, s, 0, 0)
	if got := list(t, s); len(got) != 0 {
		t.Fatalf("List of an empty store: %d blocks", len(got))
	}
	before := time.Now().Add(-2 * time.Second).UnixNano() // file systems' clocks are coarse
	sizes := map[block.Hash]int64{}
	for i := range 10 {
		data := Data(uint64(200+i), 1000*i)
		sizes[put(t, s, data)] = int64(len(data))
	}
	after := time.Now().Add(2 * time.Second).UnixNano()
	checkUsage(t, s, 10, 45000)
	got := list(t, s)
	if len(got) != len(sizes) {
		t.Fatalf("List: %d blocks, want %d", len(got), len(sizes))
	}
	for h, size := range sizes {
		info, ok := got[h]
		if !ok || info.Size != size || info.ModTime < before || info.ModTime > after {
			t.Fatalf("List: block %s: got %+v (listed %v), want size %d and a current mtime", h.Short(), info, ok, size)
		}
	}

	// An error from fn stops List and comes back.
	stop := errors.New("stop here")
	calls := 0
	err := s.List(ctx, func(block.Info) error { calls++; return stop })
	if !errors.Is(err, stop) || calls != 1 {
		t.Fatalf("List with a failing fn: %d calls, error %v; want 1 call and the fn's error", calls, err)
	}

	// Remove only blocks whose latest Put is before notAfter.
	var h block.Hash
	for h = range sizes {
		break
	}
	info := got[h]
	removed, err := s.Remove(ctx, h, info.ModTime)
	if err != nil || removed {
		t.Fatalf("Remove(notAfter = its mtime) = %v, %v; want false: it is not older", removed, err)
	}
	removed, err = s.Remove(ctx, h, info.ModTime+1)
	if err != nil || !removed {
		t.Fatalf("Remove(notAfter = mtime+1) = %v, %v; want true", removed, err)
	}
	if _, err := s.Get(ctx, h); !errors.Is(err, block.ErrNotFound) {
		t.Fatalf("Get after Remove: %v, want ErrNotFound", err)
	}
	removed, err = s.Remove(ctx, h, info.ModTime+1)
	if err != nil || removed {
		t.Fatalf("Remove of an absent block = %v, %v; want false, nil", removed, err)
	}
	checkUsage(t, s, 9, 45000-sizes[h])
	if got := list(t, s); len(got) != 9 {
		t.Fatalf("List after Remove: %d blocks, want 9", len(got))
	}
}

// testModel applies random operations to the store and to a map, comparing
// each result.
func testModel(t *testing.T, s block.Store) {
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("BLOCKTEST_SEED"); v != "" {
		var err error
		if seed, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("BLOCKTEST_SEED=%q: %v", v, err)
		}
	}
	t.Logf("seed %d (replay with BLOCKTEST_SEED=%d)", seed, seed)
	r := rand.New(rand.NewPCG(seed, 1))
	ctx := context.Background()
	l, isLister := s.(block.Lister)

	const pool = 16
	contents := make([][]byte, pool)
	for i := range contents {
		contents[i] = Data(seed+uint64(i), r.IntN(20000))
	}
	model := map[block.Hash][]byte{}
	for step := range 300 {
		data := contents[r.IntN(pool)]
		h := block.Sum(data)
		switch op := r.IntN(10); {
		case op < 4:
			if err := s.Put(ctx, h, data); err != nil {
				t.Fatalf("step %d: Put %s: %v", step, h.Short(), err)
			}
			model[h] = data
		case op < 7:
			got, err := s.Get(ctx, h)
			want, ok := model[h]
			switch {
			case ok && (err != nil || !bytes.Equal(got, want)):
				t.Fatalf("step %d: Get %s: %d bytes, %v; want the stored %d bytes", step, h.Short(), len(got), err, len(want))
			case !ok && !errors.Is(err, block.ErrNotFound):
				t.Fatalf("step %d: Get %s of a missing block: %v, want ErrNotFound", step, h.Short(), err)
			}
		case op < 9:
			var hs []block.Hash
			for range r.IntN(5) {
				hs = append(hs, block.Sum(contents[r.IntN(pool)]))
			}
			has, err := s.Has(ctx, hs)
			if err != nil || len(has) != len(hs) {
				t.Fatalf("step %d: Has: %v, %v", step, has, err)
			}
			for i, h := range hs {
				if _, ok := model[h]; ok != has[i] {
					t.Fatalf("step %d: Has %s = %v, want %v", step, h.Short(), has[i], ok)
				}
			}
		default:
			if !isLister {
				continue
			}
			removed, err := l.Remove(ctx, h, time.Now().Add(time.Hour).UnixNano())
			_, ok := model[h]
			if err != nil || removed != ok {
				t.Fatalf("step %d: Remove %s = %v, %v; want %v", step, h.Short(), removed, err, ok)
			}
			delete(model, h)
		}
	}
	if isLister {
		var n int64
		for _, d := range model {
			n += int64(len(d))
		}
		checkUsage(t, l, int64(len(model)), n)
	}
}
