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

func TestStoppedServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c := client.New(addr, client.Options{})
	start := time.Now()
	_, err = c.Get(context.Background(), block.Sum(nil))
	if !errors.Is(err, block.ErrUnavailable) || !strings.Contains(err.Error(), addr) {
		t.Fatalf("Get from a stopped server: %v; want ErrUnavailable naming %s", err, addr)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("Get from a stopped server took %v", d)
	}
	t.Logf("%v after %v", err, time.Since(start))
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
	c := client.New(ln.Addr().String(), client.Options{Budget: budget, AttemptTimeout: 200 * time.Millisecond, MinRate: 8 << 20})
	data := blocktest.Data(1, 1<<20)
	start := time.Now()
	err = c.Put(context.Background(), block.Sum(data), data)
	if !errors.Is(err, block.ErrUnavailable) {
		t.Fatalf("Put to a hung server: %v, want ErrUnavailable", err)
	}
	// The budget grows by the body's time at the minimum rate (1 MiB at
	// 8 MiB/s = 125 ms).
	if d := time.Since(start); d > budget+125*time.Millisecond+500*time.Millisecond {
		t.Fatalf("Put to a hung server took %v", d)
	}
	t.Logf("%v after %v", err, time.Since(start))
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

// trickle serves data for any GET in chunks of 64 KiB, pausing `pause`
// between them; after `stopAfter` chunks (0: never) it stalls until the
// request ends.
func trickle(data []byte, pause time.Duration, stopAfter int) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(len(data)))
		w.WriteHeader(http.StatusOK)
		for i := 0; i*64<<10 < len(data); i++ {
			if stopAfter > 0 && i == stopAfter {
				<-r.Context().Done()
				return
			}
			w.Write(data[i*64<<10 : min(len(data), (i+1)*64<<10)])
			w.(http.Flusher).Flush()
			time.Sleep(pause)
		}
	})
}

// A transfer slower than MinRate that keeps moving is not cut: the
// watchdog follows its progress (several uploads sharing a slow link each
// ran below MinRate and failed).
func TestSlowSteadyTransfer(t *testing.T) {
	data := blocktest.Data(3, 512<<10)
	// 8 chunks 60 ms apart: ~0.5 s, where AttemptTimeout plus the body at
	// MinRate allows 150 ms + 64 ms.
	c := serve(t, trickle(data, 60*time.Millisecond, 0), client.Options{AttemptTimeout: 150 * time.Millisecond, MinRate: 8 << 20, Tries: 1})
	start := time.Now()
	got, err := c.Get(context.Background(), block.Sum(data))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("slow but steady Get: %v", err)
	}
	t.Logf("512 KiB in %v", time.Since(start).Round(time.Millisecond))
}

// A transfer that stops moving is cut AttemptTimeout after its last bytes
// (plus the rest at MinRate), not at the end of a long fixed deadline.
func TestStalledTransfer(t *testing.T) {
	data := blocktest.Data(4, 512<<10)
	c := serve(t, trickle(data, 10*time.Millisecond, 2), client.Options{AttemptTimeout: 150 * time.Millisecond, MinRate: 8 << 20, Tries: 1})
	start := time.Now()
	_, err := c.Get(context.Background(), block.Sum(data))
	if !errors.Is(err, block.ErrUnavailable) {
		t.Fatalf("Get of a reply that stalls: %v, want ErrUnavailable", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("a stalled Get took %v to fail", d)
	}
	t.Logf("%v after %v", err, time.Since(start).Round(time.Millisecond))
}
