package client_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"tessera/internal/block"
	"tessera/internal/block/blocktest"
	"tessera/internal/block/client"
	"tessera/internal/block/disk"
	"tessera/internal/block/server"
	"tessera/internal/clock"
)

func openDisk(t testing.TB, dir string) *disk.Store {
	t.Helper()
	s, err := disk.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// serve serves h on 127.0.0.1 and returns a client of it.
func serve(t testing.TB, h http.Handler, opts client.Options) *client.Client {
	t.Helper()
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	tr := client.NewTransport()
	t.Cleanup(tr.CloseIdleConnections)
	if opts.Transport == nil {
		opts.Transport = tr
	}
	return client.New(ts.Listener.Addr().String(), opts)
}

func TestConformance(t *testing.T) {
	blocktest.Run(t, func(t *testing.T) block.Store {
		return serve(t, server.New(openDisk(t, t.TempDir()), server.Options{}), client.Options{})
	})
}

// plain hides disk.Store's optional capabilities, exercising the server's
// fallbacks.
type plain struct{ server.Backend }

func TestConformancePlainBackend(t *testing.T) {
	blocktest.Run(t, func(t *testing.T) block.Store {
		return serve(t, server.New(plain{openDisk(t, t.TempDir())}, server.Options{}), client.Options{})
	})
}

func TestCorruptOnServer(t *testing.T) {
	d := openDisk(t, t.TempDir())
	var requests atomic.Int32
	h := server.New(d, server.Options{})
	c := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		h.ServeHTTP(w, r)
	}), client.Options{})
	ctx := context.Background()
	data := blocktest.Data(1, 5000)
	sum := block.Sum(data)
	if err := c.Put(ctx, sum, data); err != nil {
		t.Fatal(err)
	}
	data[10] ^= 1
	if err := os.WriteFile(d.Path(sum), data, 0o644); err != nil {
		t.Fatal(err)
	}
	requests.Store(0)
	_, err := c.Get(ctx, sum)
	if !errors.Is(err, block.ErrCorrupt) || !strings.Contains(err.Error(), d.Path(sum)) {
		t.Fatalf("Get of a block corrupt on the server: %v; want ErrCorrupt naming %s", err, d.Path(sum))
	}
	if n := requests.Load(); n != 1 {
		t.Fatalf("corruption was retried: %d requests", n)
	}
}

func TestCorruptOnWire(t *testing.T) {
	want := []byte("the real block")
	sum := block.Sum(want)
	var requests atomic.Int32
	c := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Write([]byte("the fake block"))
	}), client.Options{})
	_, err := c.Get(context.Background(), sum)
	if !errors.Is(err, block.ErrCorrupt) {
		t.Fatalf("Get of bad bytes: %v, want ErrCorrupt", err)
	}
	if n := requests.Load(); n != 1 {
		t.Fatalf("corruption was retried: %d requests", n)
	}
}

func TestRetries5xx(t *testing.T) {
	h := server.New(openDisk(t, t.TempDir()), server.Options{})
	var requests atomic.Int32
	c := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if requests.Add(1) <= 2 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		h.ServeHTTP(w, r)
	}), client.Options{Backoff: time.Millisecond})
	data := []byte("persistent")
	if err := c.Put(context.Background(), block.Sum(data), data); err != nil {
		t.Fatalf("Put through two 503s: %v", err)
	}
	if n := requests.Load(); n != 3 {
		t.Fatalf("%d requests, want 3", n)
	}
}

func TestNotABlockServer(t *testing.T) {
	c := serve(t, http.NotFoundHandler(), client.Options{})
	_, err := c.Get(context.Background(), block.Sum(nil))
	if err == nil || errors.Is(err, block.ErrNotFound) {
		t.Fatalf("Get from a server without the route: %v; want an error that is not ErrNotFound", err)
	}
}

// TestStoppedServer: a server that refuses connections yields
// ErrUnavailable naming it after the call's tries, within its budget of
// clock time (the clock is fake and moves only to the client's own
// deadlines: the test does not depend on how fast the machine is).
func TestStoppedServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	clk := clock.NewFake(time.Unix(0, 0))
	c := client.New(addr, client.Options{Clock: clk})
	start := clk.Now()
	err = drive(t, clk, func() error {
		_, err := c.Get(context.Background(), block.Sum(nil))
		return err
	})
	if !errors.Is(err, block.ErrUnavailable) || !strings.Contains(err.Error(), addr) {
		t.Fatalf("Get from a stopped server: %v; want ErrUnavailable naming %s", err, addr)
	}
	// No try starts after the 3 s budget, and a try lasts at most the 2 s
	// attempt timeout.
	if d := clock.Since(clk, start); d > 5*time.Second {
		t.Fatalf("Get from a stopped server took %v of clock time, want at most the budget (3 s) and one try (2 s)", d)
	}
	t.Logf("%v after %v of clock time", err, clock.Since(clk, start))
}

// drive runs call while moving clk on to each deadline the client arms
// (its backoffs, its watchdogs), and returns call's error. Only the
// client's own timers end its waits, in their order, however slow the
// machine.
func drive(t *testing.T, clk *clock.Fake, call func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- call() }()
	for {
		select {
		case err := <-done:
			return err
		case <-time.After(time.Millisecond):
			clk.AdvanceToNext()
		}
	}
}

// TestHungServer: a server that accepts connections and never answers.
func TestHungServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })

	const budget = 600 * time.Millisecond
	clk := clock.NewFake(time.Unix(0, 0))
	c := client.New(ln.Addr().String(), client.Options{Budget: budget, AttemptTimeout: 200 * time.Millisecond, MinRate: 8 << 20, Clock: clk})
	data := blocktest.Data(1, 1<<20)
	start := clk.Now()
	err = drive(t, clk, func() error { return c.Put(context.Background(), block.Sum(data), data) })
	if !errors.Is(err, block.ErrUnavailable) {
		t.Fatalf("Put to a hung server: %v, want ErrUnavailable", err)
	}
	// The budget grows by the body's time at the minimum rate (1 MiB at
	// 8 MiB/s = 125 ms); the last try, started within it, is cut by its
	// watchdog: 200 ms plus the 1 MiB the socket may still hold, 125 ms.
	if d := clock.Since(clk, start); d > budget+125*time.Millisecond+325*time.Millisecond {
		t.Fatalf("Put to a hung server took %v of clock time", d)
	}
	t.Logf("%v after %v of clock time", err, clock.Since(clk, start))
}

func TestCancel(t *testing.T) {
	hold := make(chan struct{})
	c := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hold:
		case <-r.Context().Done():
		}
	}), client.Options{})
	defer close(hold)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := c.Get(ctx, block.Sum(nil))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Get with an expiring context: %v, want context.DeadlineExceeded", err)
	}
}

func TestPutRefreshesMtime(t *testing.T) {
	d := openDisk(t, t.TempDir())
	c := serve(t, server.New(d, server.Options{}), client.Options{})
	ctx := context.Background()
	data := []byte("refresh")
	sum := block.Sum(data)
	if err := c.Put(ctx, sum, data); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(d.Path(sum), old, old); err != nil {
		t.Fatal(err)
	}
	if err := c.Put(ctx, sum, data); err != nil {
		t.Fatal(err)
	}
	if removed, err := c.Remove(ctx, sum, old.Add(time.Minute).UnixNano()); err != nil || removed {
		t.Fatalf("Remove after a refreshing Put = %v, %v; want false", removed, err)
	}
}

func TestNoSpace(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mount("tessera-test", dir, "tmpfs", 0, "size=1m"); err != nil {
		t.Skipf("cannot mount a tmpfs (%v)", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	c := serve(t, server.New(openDisk(t, dir), server.Options{}), client.Options{})
	data := blocktest.Data(1, 2<<20)
	if err := c.Put(context.Background(), block.Sum(data), data); !errors.Is(err, block.ErrNoSpace) {
		t.Fatalf("Put to a full server: %v, want ErrNoSpace", err)
	}
}

func TestGetAllocatesBlockSize(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	c := serve(t, server.New(openDisk(t, t.TempDir()), server.Options{}), client.Options{})
	ctx := context.Background()
	data := blocktest.Data(1, 4<<20)
	sum := block.Sum(data)
	if err := c.Put(ctx, sum, data); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(ctx, sum); err != nil { // warm the connection and pools
		t.Fatal(err)
	}
	const n = 5
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range n {
		got, err := c.Get(ctx, sum)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	perGet := (after.TotalAlloc - before.TotalAlloc) / n
	// Client and server together: the block itself plus small change.
	if limit := uint64(len(data)) + 256<<10; perGet > limit {
		t.Fatalf("a 4 MiB Get allocates %d bytes (client and server), want at most %d", perGet, limit)
	}
	t.Logf("%d bytes allocated per 4 MiB Get", perGet)
}

// GetAlloc asks alloc for the reply's size once, reads into the buffer it
// returns, and allocates itself when alloc has none or one too small.
func TestGetAlloc(t *testing.T) {
	c := serve(t, server.New(openDisk(t, t.TempDir()), server.Options{}), client.Options{})
	ctx := context.Background()
	data := blocktest.Data(2, 300<<10)
	sum := block.Sum(data)
	if err := c.Put(ctx, sum, data); err != nil {
		t.Fatal(err)
	}
	mine := make([]byte, 400<<10)
	var asked []int
	got, err := c.GetAlloc(ctx, sum, func(n int) []byte { asked = append(asked, n); return mine })
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("GetAlloc: %v (equal %v)", err, bytes.Equal(got, data))
	}
	if len(asked) != 1 || asked[0] != len(data) {
		t.Fatalf("alloc asked for %v, want once for %d", asked, len(data))
	}
	if &got[0] != &mine[0] {
		t.Fatal("the block was not read into alloc's buffer")
	}
	for _, give := range [][]byte{nil, make([]byte, 10)} {
		got, err := c.GetAlloc(ctx, sum, func(int) []byte { return give })
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("GetAlloc with a buffer of %d: %v", cap(give), err)
		}
		if cap(give) > 0 && &got[0] == &give[0] {
			t.Fatal("read into a buffer too small")
		}
	}
	if _, err := c.GetAlloc(ctx, block.Sum([]byte("absent")), func(int) []byte { t.Fatal("alloc called for a miss"); return nil }); !errors.Is(err, block.ErrNotFound) {
		t.Fatalf("GetAlloc of a missing block: %v", err)
	}
}

func BenchmarkPut4MiB(b *testing.B) {
	c := serve(b, server.New(openDisk(b, b.TempDir()), server.Options{}), client.Options{})
	data := blocktest.Data(1, 4<<20)
	ctx := context.Background()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		data[0], data[1], data[2], data[3] = byte(i), byte(i>>8), byte(i>>16), byte(i>>24)
		h := block.Sum(data)
		b.StartTimer()
		if err := c.Put(ctx, h, data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGet4MiB(b *testing.B) {
	c := serve(b, server.New(openDisk(b, b.TempDir()), server.Options{}), client.Options{})
	data := blocktest.Data(1, 4<<20)
	ctx := context.Background()
	h := block.Sum(data)
	if err := c.Put(ctx, h, data); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Get(ctx, h); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGetInto4MiB(b *testing.B) {
	c := serve(b, server.New(openDisk(b, b.TempDir()), server.Options{}), client.Options{})
	data := blocktest.Data(1, 4<<20)
	ctx := context.Background()
	h := block.Sum(data)
	if err := c.Put(ctx, h, data); err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, len(data))
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.GetInto(ctx, h, buf); err != nil {
			b.Fatal(err)
		}
	}
}

// trickle serves data for any GET in chunks of 64 KiB; after each chunk
// it waits until the client has read some of it (it re-armed a timer on
// clk) and moves clk on by pause. After stopAfter chunks (0: never) it
// stalls until the request ends, having closed stalled.
func trickle(t *testing.T, clk *clock.Fake, data []byte, pause time.Duration, stopAfter int, stalled chan<- struct{}) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(len(data)))
		w.WriteHeader(http.StatusOK)
		for i := 0; i*64<<10 < len(data); i++ {
			if stopAfter > 0 && i == stopAfter {
				close(stalled)
				<-r.Context().Done()
				return
			}
			arms := clk.Arms()
			w.Write(data[i*64<<10 : min(len(data), (i+1)*64<<10)])
			w.(http.Flusher).Flush()
			// The client re-arms its watchdog as it reads: wait for that
			// (bounded: a client that never re-arms fails the test by its
			// watchdog firing, after at most a few of these waits).
			for wait := 0; clk.Arms() == arms && wait < 20000 && r.Context().Err() == nil; wait++ {
				time.Sleep(time.Millisecond)
			}
			clk.Advance(pause)
		}
	})
}

// A transfer slower than MinRate that keeps moving is not cut: the
// watchdog follows its progress (several uploads sharing a slow link each
// ran below MinRate and failed). The body's 7 chunks come 60 ms of clock
// time apart, each once the client read the one before: 360 ms or more, where
// AttemptTimeout plus the body at MinRate allows 150 + 55 ms. (The clock
// was real: a machine busy for 150 ms between two chunks cut the transfer.)
// The body is under 2*lowat.Chunk, so it is read as it comes.
func TestSlowSteadyTransfer(t *testing.T) {
	data := blocktest.Data(3, 448<<10)
	clk := clock.NewFake(time.Unix(0, 0))
	c := serve(t, trickle(t, clk, data, 60*time.Millisecond, 0, nil), client.Options{AttemptTimeout: 150 * time.Millisecond, MinRate: 8 << 20, Tries: 1, Clock: clk})
	start := clk.Now()
	got, err := c.Get(context.Background(), block.Sum(data))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("slow but steady Get: %v", err)
	}
	// The Get may end before the last pause: six of them, 360 ms.
	if d := clock.Since(clk, start); d < 6*60*time.Millisecond {
		t.Fatalf("the transfer took %v of clock time, want at least 6 pauses of 60 ms: the test did not exercise the watchdog", d)
	}
}

// A transfer that stops moving is cut AttemptTimeout after its last bytes
// (plus the rest at MinRate), not at the end of a long fixed deadline (the
// 3 s budget): once the server stalls, the clock moves on to the client's
// next deadline, which must end the Get.
func TestStalledTransfer(t *testing.T) {
	data := blocktest.Data(4, 512<<10)
	clk := clock.NewFake(time.Unix(0, 0))
	stalled := make(chan struct{})
	c := serve(t, trickle(t, clk, data, 10*time.Millisecond, 2, stalled), client.Options{AttemptTimeout: 150 * time.Millisecond, MinRate: 8 << 20, Tries: 1, Clock: clk})
	done := make(chan error, 1)
	go func() {
		_, err := c.Get(context.Background(), block.Sum(data))
		done <- err
	}()
	<-stalled
	start := clk.Now()
	err := drive(t, clk, func() error { return <-done })
	if !errors.Is(err, block.ErrUnavailable) {
		t.Fatalf("Get of a reply that stalls: %v, want ErrUnavailable", err)
	}
	// Re-armed for what was left at the last bytes: at most the attempt
	// timeout plus the whole body at MinRate (62.5 ms) after the stall.
	if d := clock.Since(clk, start); d > 150*time.Millisecond+63*time.Millisecond {
		t.Fatalf("a stalled Get took %v of clock time to fail, want at most 213 ms", d)
	}
	t.Logf("%v after %v of clock time", err, clock.Since(clk, start))
}

// TestRemoveMany: RemoveMany sends its removals in batches of at most the
// server's limit, one request each, and reports for each record whether
// its own cutoff removed the block; on a backend without batches the
// server removes them one by one with the same result, and a server
// without the route gets a DELETE per record.
func TestRemoveMany(t *testing.T) {
	for name, wrap := range map[string]func(*disk.Store) server.Backend{
		"batch": func(d *disk.Store) server.Backend { return d },
		"plain": func(d *disk.Store) server.Backend { return plain{d} },
		"old":   func(d *disk.Store) server.Backend { return d }, // a server without the route
	} {
		t.Run(name, func(t *testing.T) {
			d := openDisk(t, t.TempDir())
			var posts, deletes atomic.Int64
			hd := server.New(wrap(d), server.Options{})
			c := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch {
				case r.Method == http.MethodPost && r.URL.Path == "/v1/remove":
					posts.Add(1)
					if name == "old" {
						http.NotFound(w, r)
						return
					}
				case r.Method == http.MethodDelete:
					deletes.Add(1)
				}
				hd.ServeHTTP(w, r)
			}), client.Options{})
			ctx := context.Background()
			old, young := []byte("old block"), []byte("young block")
			now := time.Now()
			for _, b := range [][]byte{old, young} {
				if err := c.Put(ctx, block.Sum(b), b); err != nil {
					t.Fatal(err)
				}
			}
			long := now.Add(-2 * time.Hour)
			if err := os.Chtimes(d.Path(block.Sum(old)), long, long); err != nil {
				t.Fatal(err)
			}
			cutoff := now.Add(-time.Hour).UnixNano()
			rs := make([]block.Removal, server.MaxRemoveBatch+1)
			for i := range rs {
				rs[i] = block.Removal{Hash: block.Sum([]byte(strconv.Itoa(i))), NotAfter: cutoff}
			}
			rs[0] = block.Removal{Hash: block.Sum(young), NotAfter: cutoff}       // written after: stays
			rs[len(rs)-1] = block.Removal{Hash: block.Sum(old), NotAfter: cutoff} // in the second batch: goes
			removed, err := c.RemoveMany(ctx, rs)
			if err != nil {
				t.Fatal(err)
			}
			if len(removed) != len(rs) || removed[0] || !removed[len(rs)-1] || slices.Contains(removed[:len(rs)-1], true) {
				t.Fatalf("RemoveMany: %d results, young removed %v, old removed %v", len(removed), removed[0], removed[len(removed)-1])
			}
			switch n, dn := posts.Load(), deletes.Load(); {
			case name == "old" && (n != 2 || dn != int64(len(rs))):
				t.Errorf("a server without POST /v1/remove: %d POSTs and %d DELETEs for %d records; want each batch tried once, then a DELETE per record", n, dn, len(rs))
			case name != "old" && (n != 2 || dn != 0):
				t.Errorf("%d requests and %d DELETEs for %d records, want 2 requests (at most %d per request)", n, dn, len(rs), server.MaxRemoveBatch)
			}
			if has, err := d.Has(ctx, []block.Hash{block.Sum(young), block.Sum(old)}); err != nil || !has[0] || has[1] {
				t.Errorf("after RemoveMany: held %v, %v; want young kept, old gone", has, err)
			}
		})
	}
}
