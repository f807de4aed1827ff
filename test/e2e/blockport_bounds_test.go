package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"tessera/internal/block"
	"tessera/internal/block/client"
	blockserver "tessera/internal/block/server"
	"tessera/test/cluster"
)

// Issue 12 item 4 on a real `tessera blockd`: peers that stall, lie about
// sizes, send garbage or hold connections open are refused or cut off, a
// good client (127.0.0.1) is served throughout, and the process's RSS
// (VmRSS) stays under a stated bound and comes back down after the burst.
// The bad peers dial from other loopback addresses (127.0.0.2…), as
// separate machines would, so that the per-peer limits apply to them.
//
// Bounds, above the RSS measured after a warm-up (base):
//   - stalled PUTs: base + 128 MiB per-peer in-flight budget + 96 MiB
//     (buffer pool, the good client's blocks, the runtime's slack);
//   - after the burst: base + 48 MiB;
//   - 500 idle connections: base + 64 MiB.
//
// Before this work, 24 stalled 64 MiB PUTs took the server to ~1.5 GB and
// it kept it; all 500 idle connections were accepted.
//
// The cluster runs --insecure: every peer here is as trusted as a caller
// that authenticated (the worst case; with TLS a peer without credentials
// gets 401 before its body is read or budgeted, TestBlockServersRefuseOutsiders),
// and the raw requests need no TLS client.
func TestBlockPortBounds(t *testing.T) {
	m := startMultiOpts(t, cluster.MultiOptions{BlockServers: 1, Insecure: true})
	d := m.Servers()[0]
	addr, pid := d.Addr(), d.PID()
	good := client.New(addr, client.Options{})
	rng := rand.New(rand.NewChaCha8([32]byte{12}))
	serveGood := func(what string) {
		t.Helper()
		data := make([]byte, 4<<20)
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		h := block.Sum(data)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := good.Put(ctx, h, data); err != nil {
			t.Fatalf("%s: the good client's put: %v", what, err)
		}
		got, err := good.Get(ctx, h)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("%s: the good client's get: %v", what, err)
		}
	}
	for range 4 {
		serveGood("warm-up")
	}
	base := vmRSS(t, pid)
	t.Logf("RSS after warm-up: %d MiB", base>>20)

	t.Run("stalled", func(t *testing.T) {
		const declared, sent, n = 64 << 20, 63 << 20, 24
		var finished atomic.Int32
		var wg sync.WaitGroup
		var conns []net.Conn
		for i := range n {
			c := dialFrom(t, "127.0.0.2", addr)
			conns = append(conns, c)
			wg.Add(1)
			go func() {
				defer wg.Done()
				// Most of the body, then nothing: the write blocks once the
				// server stops reading, and fails when the test closes c.
				fmt.Fprintf(c, "PUT /v1/blocks/%s HTTP/1.1\r\nHost: b\r\nContent-Length: %d\r\n\r\n", block.Sum([]byte{byte(i)}), declared)
				if _, err := c.Write(make([]byte, sent)); err == nil {
					finished.Add(1)
				}
			}()
		}
		pollFor(t, "two stalled PUTs to be read", func() bool { return finished.Load() >= 2 })
		serveGood("while 24 PUTs stall")
		peak := vmRSS(t, pid)
		// Let the server take what more it would; a bounded server takes
		// nothing, so this only widens the window a leak shows in.
		for i := 0; i < 20 && finished.Load() < n; i++ {
			time.Sleep(100 * time.Millisecond)
			peak = max(peak, vmRSS(t, pid))
		}
		t.Logf("stalled PUTs: %d of %d fully sent, peak RSS %d MiB", finished.Load(), n, peak>>20)
		if bound := base + (128+96)<<20; peak > bound {
			t.Errorf("RSS %d MiB while PUTs stall: over the bound of %d MiB", peak>>20, bound>>20)
		}
		for _, c := range conns {
			c.Close()
		}
		wg.Wait()
		var after int64
		left := time.Now()
		defer func() {
			if t.Failed() {
				t.Logf("RSS %d MiB %v after the stalled peers left", after>>20, time.Since(left).Round(100*time.Millisecond))
			}
		}()
		pollFor(t, "the RSS to come back down", func() bool {
			after = vmRSS(t, pid)
			return after <= base+48<<20
		})
		t.Logf("RSS after the stalled peers left: %d MiB (%v later)", after>>20, time.Since(left).Round(100*time.Millisecond))
		serveGood("after the stalled PUTs")
	})

	t.Run("largest-bodies-from-8-addresses", func(t *testing.T) {
		// Every address (127.0.0.2-9) at once: two PUTs of a block at the
		// 64 MiB limit, four /v1/has of MaxHasBatch hashes and four
		// /v1/remove of MaxRemoveBatch records, all bodies whole and
		// valid: 1.1 GiB declared, against --max-inflight (256 MiB for
		// the whole server, 128 MiB per address). Bound: base +
		// MaxInFlight + 96 MiB (as above); after: base + 48 MiB.
		const addrs, puts, batches = 8, 2, 4
		lim := blockserver.DefaultLimits()
		var blocks [puts][]byte
		for i := range blocks {
			blocks[i] = make([]byte, blockserver.DefaultMaxBlockSize)
			rand.NewChaCha8([32]byte{13, byte(i)}).Read(blocks[i])
		}
		has := make([]byte, blockserver.MaxHasBatch*block.HashSize)
		rand.NewChaCha8([32]byte{14}).Read(has)
		var rs []block.Removal
		for i := range blockserver.MaxRemoveBatch {
			rs = append(rs, block.Removal{Hash: block.Sum([]byte(strconv.Itoa(i)))}) // none stored
		}
		remove := blockserver.EncodeRemovals(rs)
		stopSampling := sampleRSSPeak(pid)
		type outcome struct {
			what string
			code int
		}
		var mu sync.Mutex
		got := map[outcome]int{}
		var wg sync.WaitGroup
		for a := range addrs {
			hc := httpFrom(t, fmt.Sprintf("127.0.0.%d", 2+a))
			send := func(what, method, path string, body []byte) {
				defer wg.Done()
				req, err := http.NewRequest(method, "http://"+addr+path, bytes.NewReader(body))
				if err != nil {
					t.Error(err)
					return
				}
				code := -1
				if resp, err := hc.Do(req); err != nil {
					t.Errorf("%s from 127.0.0.%d: %v", what, 2+a, err)
				} else {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					code = resp.StatusCode
				}
				mu.Lock()
				got[outcome{what, code}]++
				mu.Unlock()
			}
			for i := range puts {
				wg.Add(1)
				go send("put 64 MiB", "PUT", "/v1/blocks/"+block.Sum(blocks[i]).String(), blocks[i])
			}
			for range batches {
				wg.Add(2)
				go send("has 65536", "POST", "/v1/has", has)
				go send("remove 4096", "POST", "/v1/remove", remove)
			}
		}
		serveGood("while 8 addresses send their largest bodies")
		wg.Wait()
		peak := stopSampling()
		t.Logf("outcomes: %v", got)
		for _, o := range []outcome{{"put 64 MiB", 0}, {"has 65536", 0}, {"remove 4096", 0}} {
			want := addrs * batches
			if o.what == "put 64 MiB" {
				want = addrs * puts
			}
			n := 0
			for k, v := range got {
				if k.what == o.what && k.code/100 == 2 {
					n += v
				}
			}
			if n != want {
				t.Errorf("%s: %d of %d answered 2xx", o.what, n, want)
			}
		}
		checkPeak(t, pid, peak, base+lim.MaxInFlight+96<<20, " with 8 addresses sending their largest bodies")
		waitRSSBack(t, pid, base, 48<<20, "the largest bodies")
		serveGood("after the largest bodies")
	})

	t.Run("oversized-and-garbage", func(t *testing.T) {
		c := dialFrom(t, "127.0.0.2", addr)
		fmt.Fprintf(c, "PUT /v1/blocks/%s HTTP/1.1\r\nHost: b\r\nContent-Length: %d\r\n\r\n", block.Sum(nil), int64(1)<<30)
		if code, class := readStatus(t, c); code != http.StatusRequestEntityTooLarge || class != "too-large" {
			t.Errorf("PUT declaring 1 GiB: %d %q, want 413 too-large", code, class)
		}
		g := dialFrom(t, "127.0.0.2", addr)
		junk := make([]byte, 64<<10)
		for i := range junk {
			junk[i] = byte(rng.Uint32())
		}
		junk[0] = 0x16 // not a method
		g.Write(junk)
		if code, _ := readStatus(t, g); code != http.StatusBadRequest {
			t.Errorf("garbage bytes: status %d, want 400", code)
		}
		serveGood("after oversized and garbage requests")
	})

	t.Run("slowloris", func(t *testing.T) {
		// Headers that never end: the server closes each connection
		// (ReadHeaderTimeout, 10 s) and serves others meanwhile.
		var closed atomic.Int32
		for range 20 {
			c := dialFrom(t, "127.0.0.3", addr)
			fmt.Fprintf(c, "GET /v1/usage HTTP/1.1\r\nHost: b\r\nX-Slow: a")
			go func() {
				io.Copy(io.Discard, c)
				closed.Add(1)
			}()
		}
		serveGood("while headers trickle")
		pollFor(t, "the server to close the slow connections", func() bool { return closed.Load() == 20 })
	})

	t.Run("idle-connections", func(t *testing.T) {
		const n = 500
		perIP := int32(blockserver.DefaultLimits().MaxConnsPerIP)
		var refused, ended atomic.Int32
		for range n {
			c := dialFrom(t, "127.0.0.4", addr)
			go func() {
				b, _ := io.ReadAll(c)
				if strings.HasPrefix(string(b), "HTTP/1.1 503") && strings.Contains(string(b), "too many connections") {
					refused.Add(1)
				}
				ended.Add(1)
			}()
		}
		// Each connection is either refused at once or held until the
		// server's header timeout; both end by themselves.
		pollFor(t, "the refusals", func() bool { return refused.Load() >= n-perIP || ended.Load() == n })
		serveGood("with 500 idle connections open")
		if rss := vmRSS(t, pid); rss > base+64<<20 {
			t.Errorf("RSS %d MiB with idle connections: over the bound of %d MiB", rss>>20, (base+64<<20)>>20)
		}
		pollFor(t, "the idle connections to end", func() bool { return ended.Load() == n })
		if got := refused.Load(); got != n-perIP {
			t.Errorf("%d of %d idle connections from one peer refused, want %d (the cap per peer is %d)", got, n, n-perIP, perIP)
		}
		serveGood("after the idle connections")
	})
}

// dialFrom opens a TCP connection to addr from the loopback address src
// (a peer of its own for the server's per-IP limits), closed at cleanup.
func dialFrom(t *testing.T, src, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 30 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial %s from %s: %v", addr, src, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// httpFrom is an HTTP client whose connections come from the loopback
// address src; its idle connections are closed at cleanup.
func httpFrom(t *testing.T, src string) *http.Client {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 30 * time.Second}
	tr := &http.Transport{DialContext: d.DialContext, MaxConnsPerHost: 64}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 5 * time.Minute}
}

// readStatus reads one reply from c: its status and error class.
func readStatus(t *testing.T, c net.Conn) (int, string) {
	t.Helper()
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("read reply: %v", err)
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Tessera-Error")
}

// pollFor polls cond every 50 ms until it holds; its bound (two minutes)
// is one only a hang reaches.
func pollFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); !cond(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
	}
}
