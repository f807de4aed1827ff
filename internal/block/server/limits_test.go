package server

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"tessera/internal/block"
	"tessera/internal/block/disk"
	"tessera/internal/clock"
)

// pollUntil polls cond until it holds; the bound is one only a hang
// reaches.
func pollUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestBudgetWaitsThenRefuses(t *testing.T) {
	clk := clock.NewFake(time.Unix(0, 0))
	var drained []int64
	b := newBudget(Limits{MaxInFlight: 100, MaxInFlightPerIP: 60, BudgetWait: time.Minute}, clk,
		func(peak int64) { drained = append(drained, peak) })
	ctx := context.Background()
	relA, err := b.acquire(ctx, "a", 60)
	if err != nil {
		t.Fatal(err)
	}
	// Another peer fits in what is left of the total.
	relB, err := b.acquire(ctx, "b", 40)
	if err != nil {
		t.Fatal(err)
	}
	// Peer a is at its limit: its next request waits, then is refused.
	got := make(chan error, 1)
	go func() {
		_, err := b.acquire(ctx, "a", 1)
		got <- err
	}()
	pollUntil(t, "the waiter's timer", func() bool { return clk.Pending() == 1 })
	clk.Advance(time.Minute)
	if err := <-got; !errors.Is(err, errBusy) || !strings.Contains(err.Error(), "60 in flight from a (limit 60)") {
		t.Fatalf("over the per-peer budget: %v, want errBusy naming the peer's bytes", err)
	}
	// A waiter is let in once bytes are given back.
	go func() {
		rel, err := b.acquire(ctx, "a", 50)
		if err == nil {
			rel()
		}
		got <- err
	}()
	pollUntil(t, "the second waiter's timer", func() bool { return clk.Pending() == 1 })
	relA()
	relA() // twice is once
	if err := <-got; err != nil {
		t.Fatalf("after a release: %v", err)
	}
	relB()
	if b.inFlight() != 0 || len(drained) != 1 || drained[0] != 100 {
		t.Fatalf("in flight %d, drained %v; want 0 and one drain at the peak of 100", b.inFlight(), drained)
	}
	if _, err := b.acquire(ctx, "a", 61); !errors.Is(err, errBusy) {
		t.Fatalf("a request larger than the per-peer budget: %v, want errBusy at once", err)
	}
}

// dialFrom opens a TCP connection to addr from the loopback address src,
// so that a test can be two peers.
func dialFrom(t *testing.T, src, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

type limitedServer struct {
	h     *Handler
	store *disk.Store
	addr  string
}

// serveLimited serves a disk store with limits l on a real loopback
// listener behind LimitListener.
func serveLimited(t *testing.T, l Limits, maxBlock int64) *limitedServer {
	t.Helper()
	s, err := disk.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	h := New(s, Options{MaxBlockSize: maxBlock, Limits: l})
	t.Cleanup(h.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := NewHTTPServer(ln.Addr().String(), h, slog.New(slog.DiscardHandler))
	l.ConfigureServer(srv)
	go srv.Serve(LimitListener(ln, l, nil))
	t.Cleanup(func() { srv.Close() })
	return &limitedServer{h: h, store: s, addr: ln.Addr().String()}
}

// put stores data through a fresh connection from src and returns the
// status.
func putFrom(t *testing.T, src, addr string, data []byte) int {
	t.Helper()
	c := dialFrom(t, src, addr)
	h := block.Sum(data)
	fmt.Fprintf(c, "PUT /v1/blocks/%s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", h, len(data))
	c.Write(data)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestStalledPutsHoldNoMoreThanTheBudget: peers that announce large
// bodies and send nothing reserve at most their budget (the rest wait
// without a buffer), another peer is served meanwhile, and the stalled
// ones are dropped once their bodies idle too long.
func TestStalledPutsHoldNoMoreThanTheBudget(t *testing.T) {
	const blockSize = 4 << 20
	ls := serveLimited(t, Limits{
		MaxInFlight: 3 * blockSize, MaxInFlightPerIP: 2 * blockSize,
		BodyIdleTimeout: 500 * time.Millisecond,
	}, blockSize)
	var stalled []net.Conn
	for i := range 8 {
		c := dialFrom(t, "127.0.0.2", ls.addr)
		fmt.Fprintf(c, "PUT /v1/blocks/%s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", block.Sum([]byte{byte(i)}), blockSize)
		stalled = append(stalled, c)
	}
	pollUntil(t, "the stalled peer to reach its budget", func() bool { return ls.h.budget.inFlight() == 2*blockSize })
	good := bytes.Repeat([]byte("good"), blockSize/4)
	if code := putFrom(t, "127.0.0.1", ls.addr, good); code != http.StatusCreated {
		t.Fatalf("PUT by another peer while one stalls: status %d", code)
	}
	if ls.h.budget.inFlight() > 2*blockSize {
		t.Fatalf("%d bytes in flight, more than the stalled peer's budget", ls.h.budget.inFlight())
	}
	// Each stalled PUT ends with a 400 once its body idled, and the
	// waiting ones then get their turn and end the same way.
	for i, c := range stalled {
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("stalled PUT %d: %v", i, err)
		}
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "read body") {
			t.Fatalf("stalled PUT %d: %d %q, want 400 naming the body", i, resp.StatusCode, body)
		}
	}
	pollUntil(t, "the budget to empty", func() bool { return ls.h.budget.inFlight() == 0 })
}

func TestOversizedPutRefusedBeforeItsBody(t *testing.T) {
	ls := serveLimited(t, Limits{}, 1<<20)
	c := dialFrom(t, "127.0.0.1", ls.addr)
	fmt.Fprintf(c, "PUT /v1/blocks/%s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", block.Sum(nil), 1<<30)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusRequestEntityTooLarge || resp.Header.Get(ErrorHeader) != ClassTooLarge {
		t.Fatalf("PUT declaring 1 GiB: %d %s, want 413 too-large", resp.StatusCode, resp.Header.Get(ErrorHeader))
	}
	if n := ls.h.budget.inFlight(); n != 0 {
		t.Fatalf("%d bytes reserved for a refused PUT", n)
	}
}

func TestConnectionCapPerPeer(t *testing.T) {
	ls := serveLimited(t, Limits{MaxConns: 8, MaxConnsPerIP: 4}, 1<<20)
	var idle []net.Conn
	for range 4 {
		idle = append(idle, dialFrom(t, "127.0.0.2", ls.addr))
	}
	// The fifth from that peer is refused with a 503 that names the cause.
	c := dialFrom(t, "127.0.0.2", ls.addr)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get(ErrorHeader) != ClassBusy ||
		!strings.Contains(string(body), "too many connections") {
		t.Fatalf("connection over the per-peer cap: %d %q %q", resp.StatusCode, resp.Header.Get(ErrorHeader), body)
	}
	// Another peer is served.
	if code := putFrom(t, "127.0.0.1", ls.addr, []byte("x")); code != http.StatusCreated {
		t.Fatalf("PUT from another peer: %d", code)
	}
	// A closed connection gives its slot back.
	idle[0].Close()
	pollUntil(t, "a slot to be given back", func() bool {
		return putFrom(t, "127.0.0.2", ls.addr, []byte("y")) == http.StatusCreated
	})
}

func TestReleaseAfterBurst(t *testing.T) {
	clk := clock.NewFake(time.Unix(0, 0))
	s, err := disk.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	h := New(s, Options{Clock: clk, Limits: Limits{ReleaseAbove: 1 << 20, ReleaseAfter: 5 * time.Second}})
	defer h.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ConnContext: connContext}
	go srv.Serve(ln)
	defer srv.Close()
	for i := range 3 {
		data := bytes.Repeat([]byte{byte(i)}, 2<<20)
		if code := putFrom(t, "127.0.0.1", ln.Addr().String(), data); code != http.StatusCreated {
			t.Fatalf("put: %d", code)
		}
	}
	pollUntil(t, "the buffers back in the pool", func() bool { return h.bufs.held.Load() > 0 })
	pollUntil(t, "the release to be armed", func() bool { return clk.Pending() == 1 })
	if h.rel.released() != 0 {
		t.Fatal("released before the quiet period")
	}
	clk.Advance(5 * time.Second)
	pollUntil(t, "the release", func() bool { return h.rel.released() == 1 })
	if n := h.bufs.held.Load(); n != 0 {
		t.Fatalf("%d bytes still pooled after the release", n)
	}
}

func TestBufPoolBoundedInAll(t *testing.T) {
	var p bufPool
	var bufs [][]byte
	for range 64 {
		bufs = append(bufs, p.get(4<<20))
	}
	for _, b := range bufs {
		p.put(b)
	}
	if n := p.held.Load(); n > poolTotal || n > poolBytes+64*hashSlack {
		t.Fatalf("pool holds %d bytes, more than its bounds", n)
	}
	if p.drain() == 0 || p.held.Load() != 0 {
		t.Fatal("drain left buffers")
	}
}

// TestLimitedConnKeepsSocketPaths: the listener's wrapper still offers
// what sendfile (io.ReaderFrom) and package lowat (syscall.Conn) need.
func TestLimitedConnKeepsSocketPaths(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ll := LimitListener(ln, Limits{}, nil)
	defer ll.Close()
	dialFrom(t, "127.0.0.1", ln.Addr().String())
	c, err := ll.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, ok := c.(io.ReaderFrom); !ok {
		t.Fatal("accepted connection is not an io.ReaderFrom: GET bodies would not use sendfile")
	}
	sc, ok := c.(interface {
		SyscallConn() (syscall.RawConn, error)
	})
	if !ok {
		t.Fatal("accepted connection is not a syscall.Conn: lowat would read in small pieces")
	}
	if _, err := sc.SyscallConn(); err != nil {
		t.Fatal(err)
	}
}

// TestTricklingBodyCutOff: a body whose bytes keep coming, each well
// within the idle timeout, but slower than MinBodyRate, is cut off at its
// overall deadline.
func TestTricklingBodyCutOff(t *testing.T) {
	ls := serveLimited(t, Limits{BodyGrace: 200 * time.Millisecond, MinBodyRate: 1 << 20, BodyIdleTimeout: time.Minute}, 1<<20)
	c := dialFrom(t, "127.0.0.2", ls.addr)
	fmt.Fprintf(c, "PUT /v1/blocks/%s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", block.Sum(nil), 64<<10)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		// A byte every 20 ms: 50 bytes/s. Ends when the server hangs up,
		// the test ends, or the body would be complete.
		for range 64 << 10 {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			if _, err := c.Write([]byte{0}); err != nil {
				return
			}
		}
	}()
	// A bound only a hang reaches: before the fix, the server went on
	// reading the trickle after its reply, with no deadline.
	c.SetReadDeadline(time.Now().Add(time.Minute))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "read body") {
		t.Fatalf("trickling PUT: %d %q, want 400 naming the body", resp.StatusCode, body)
	}
	pollUntil(t, "the budget to empty", func() bool { return ls.h.budget.inFlight() == 0 })
}

func TestChunkedPutOverMaxRefused(t *testing.T) {
	ls := serveLimited(t, Limits{}, 64<<10)
	c := dialFrom(t, "127.0.0.1", ls.addr)
	fmt.Fprintf(c, "PUT /v1/blocks/%s HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n", block.Sum(nil))
	chunk := make([]byte, 32<<10)
	for range 3 {
		fmt.Fprintf(c, "%x\r\n", len(chunk))
		c.Write(chunk)
		io.WriteString(c, "\r\n")
	}
	io.WriteString(c, "0\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusRequestEntityTooLarge || resp.Header.Get(ErrorHeader) != ClassTooLarge {
		t.Fatalf("chunked PUT of 96 KiB over a 64 KiB maximum: %d %q", resp.StatusCode, resp.Header.Get(ErrorHeader))
	}
}

// TestBatchReservesBodyAndRecords: a batched POST holds its body and the
// records decoded from it at once, so it reserves twice the declared
// body's bytes while it is read and served.
func TestBatchReservesBodyAndRecords(t *testing.T) {
	ls := serveLimited(t, Limits{}, 1<<20)
	const n = 1000 * block.HashSize
	c := dialFrom(t, "127.0.0.2", ls.addr)
	fmt.Fprintf(c, "POST /v1/has HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", n)
	pollUntil(t, "the batch's reservation", func() bool { return ls.h.budget.inFlight() > 0 })
	if got := ls.h.budget.inFlight(); got != 2*n {
		t.Fatalf("a /v1/has of %d bytes reserved %d; want %d (body and decoded hashes)", n, got, 2*n)
	}
	c.Close()
	pollUntil(t, "the budget to empty", func() bool { return ls.h.budget.inFlight() == 0 })
}
