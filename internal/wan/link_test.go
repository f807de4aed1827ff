package wan

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"testing"
	"time"
)

// hang bounds waits for something that must happen; only a hang reaches it.
const hang = time.Minute

// server is a loopback TCP server run for one test; handle serves each
// connection.
func server(t *testing.T, handle func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				handle(c)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

func echo(c net.Conn) { io.Copy(c, c) }

func newLink(t *testing.T, upstream string, o LinkOptions) *Link {
	t.Helper()
	l, err := NewLink(upstream, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, hang)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// roundTrip writes one byte and reads it back, returning the time it took.
func roundTrip(t *testing.T, c net.Conn) time.Duration {
	t.Helper()
	start := time.Now()
	if _, err := c.Write([]byte{'x'}); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(hang))
	b := make([]byte, 1)
	if _, err := io.ReadFull(c, b); err != nil {
		t.Fatalf("round trip: %v", err)
	}
	return time.Since(start)
}

func TestLinkLatency(t *testing.T) {
	const latency = 30 * time.Millisecond
	l := newLink(t, server(t, echo), LinkOptions{Latency: latency})
	c := dial(t, l.Addr())
	for i := 0; i < 5; i++ {
		if rtt := roundTrip(t, c); rtt < 2*latency {
			t.Fatalf("round trip %d took %v through a link of %v one-way latency; want at least %v", i, rtt, latency, 2*latency)
		}
	}
	if l.BytesUp() != 5 || l.BytesDown() != 5 {
		t.Fatalf("counters up %d down %d, want 5 and 5", l.BytesUp(), l.BytesDown())
	}
}

func TestLinkRefusesNonLoopback(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "10.1.2.3:0", "[::1]:0", "nonsense"} {
		if _, err := NewLink("127.0.0.1:1", LinkOptions{Listen: addr}); err == nil {
			t.Errorf("NewLink with listen %q: no error, want a refusal", addr)
		}
	}
	if _, err := NewLink("127.0.0.1:1", LinkOptions{Latency: 1500 * time.Microsecond}); err == nil {
		t.Errorf("NewLink with a latency of 1.5ms: no error, want a refusal (toxiproxy counts whole ms)")
	}
}

// TestLinkRate sends a bounded amount each way and checks the cap from
// above only: bytes over elapsed time may be lower on a slow machine,
// never higher than the cap (with 20% slack for clock granularity).
func TestLinkRate(t *testing.T) {
	const rate = 256 << 10
	const size = 512 << 10
	t.Run("up", func(t *testing.T) {
		got := make(chan int64, 1)
		addr := server(t, func(c net.Conn) {
			n, _ := io.CopyN(io.Discard, c, size)
			got <- n
			c.Write([]byte{'k'})
		})
		l := newLink(t, addr, LinkOptions{Rate: rate})
		c := dial(t, l.Addr())
		start := time.Now()
		if _, err := c.Write(bytes.Repeat([]byte{'u'}, size)); err != nil {
			t.Fatal(err)
		}
		c.SetReadDeadline(time.Now().Add(hang))
		if _, err := io.ReadFull(c, make([]byte, 1)); err != nil {
			t.Fatal(err)
		}
		checkRate(t, size, time.Since(start), rate)
		if n := <-got; n != size {
			t.Fatalf("server got %d bytes, want %d", n, size)
		}
		if l.BytesUp() != size {
			t.Fatalf("BytesUp %d, want %d", l.BytesUp(), size)
		}
	})
	t.Run("down", func(t *testing.T) {
		addr := server(t, func(c net.Conn) {
			c.Read(make([]byte, 1))
			c.Write(bytes.Repeat([]byte{'d'}, size))
		})
		l := newLink(t, addr, LinkOptions{Rate: rate})
		c := dial(t, l.Addr())
		start := time.Now()
		c.Write([]byte{'g'})
		c.SetReadDeadline(time.Now().Add(hang))
		if _, err := io.ReadFull(c, make([]byte, size)); err != nil {
			t.Fatal(err)
		}
		checkRate(t, size, time.Since(start), rate)
		if l.BytesDown() != size {
			t.Fatalf("BytesDown %d, want %d", l.BytesDown(), size)
		}
	})
	t.Run("shared", func(t *testing.T) {
		// Three connections at once share the one cap.
		addr := server(t, func(c net.Conn) {
			c.Read(make([]byte, 1))
			c.Write(bytes.Repeat([]byte{'d'}, size/2))
		})
		l := newLink(t, addr, LinkOptions{Rate: rate})
		conns := []net.Conn{dial(t, l.Addr()), dial(t, l.Addr()), dial(t, l.Addr())}
		start := time.Now()
		errs := make(chan error, len(conns))
		for _, c := range conns {
			go func(c net.Conn) {
				c.Write([]byte{'g'})
				c.SetReadDeadline(time.Now().Add(hang))
				_, err := io.ReadFull(c, make([]byte, size/2))
				errs <- err
			}(c)
		}
		for range conns {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		checkRate(t, 3*size/2, time.Since(start), rate)
	})
	t.Run("flow", func(t *testing.T) {
		// FlowRate caps each connection by itself: each of three at once
		// stays under it. (That they are not also held to it together is
		// a lower bound on speed, which a busy machine may not give; the
		// schedules are per connection by construction, see shapeToxic.)
		addr := server(t, func(c net.Conn) {
			c.Read(make([]byte, 1))
			c.Write(bytes.Repeat([]byte{'d'}, size/2))
		})
		l := newLink(t, addr, LinkOptions{FlowRate: rate})
		conns := []net.Conn{dial(t, l.Addr()), dial(t, l.Addr()), dial(t, l.Addr())}
		errs := make(chan error, len(conns))
		took := make(chan time.Duration, len(conns))
		for _, c := range conns {
			go func(c net.Conn) {
				start := time.Now()
				c.Write([]byte{'g'})
				c.SetReadDeadline(time.Now().Add(hang))
				_, err := io.ReadFull(c, make([]byte, size/2))
				took <- time.Since(start)
				errs <- err
			}(c)
		}
		for range conns {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
			checkRate(t, size/2, <-took, rate)
		}
		if l.BytesDown() != 3*size/2 {
			t.Fatalf("BytesDown %d, want %d", l.BytesDown(), 3*size/2)
		}
	})
}

func checkRate(t *testing.T, n int64, elapsed time.Duration, rate int64) {
	t.Helper()
	got := float64(n) / elapsed.Seconds()
	t.Logf("%d bytes in %v: %.0f B/s (cap %d B/s)", n, elapsed, got, rate)
	if got > float64(rate)*1.2 {
		t.Fatalf("%d bytes in %v is %.0f B/s, above the cap of %d B/s (+20%%)", n, elapsed, got, rate)
	}
}

func TestLinkCutRefuse(t *testing.T) {
	l := newLink(t, server(t, echo), LinkOptions{Latency: time.Millisecond})
	c := dial(t, l.Addr())
	roundTrip(t, c)
	addr := l.Addr()
	if err := l.Cut(Refuse); err != nil {
		t.Fatal(err)
	}
	if !l.IsCut() {
		t.Fatal("IsCut false after Cut")
	}
	// The open connection is broken: a read ends with EOF or a reset.
	c.SetReadDeadline(time.Now().Add(hang))
	if n, err := c.Read(make([]byte, 1)); err == nil || isTimeout(err) {
		t.Fatalf("read on a connection through a refusing link: %d bytes, err %v; want EOF or reset", n, err)
	}
	// New dials are refused.
	if c2, err := net.DialTimeout("tcp", addr, hang); err == nil {
		c2.Close()
		t.Fatalf("dial %s through a refusing link succeeded", addr)
	} else if isTimeout(err) {
		t.Fatalf("dial %s through a refusing link timed out, want refused: %v", addr, err)
	}
	if err := l.Heal(); err != nil {
		t.Fatal(err)
	}
	if l.Addr() != addr {
		t.Fatalf("healed link listens on %s, was %s", l.Addr(), addr)
	}
	roundTrip(t, dial(t, addr))
}

func TestLinkCutBlackhole(t *testing.T) {
	l := newLink(t, server(t, echo), LinkOptions{Latency: time.Millisecond})
	c := dial(t, l.Addr())
	roundTrip(t, c)
	if err := l.Cut(Blackhole); err != nil {
		t.Fatal(err)
	}
	// Nothing passes: the echo does not come back while cut. The deadline
	// only ends the wait; a slow machine cannot make bytes pass.
	if _, err := c.Write([]byte("held")); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if n, err := c.Read(make([]byte, 4)); !isTimeout(err) {
		t.Fatalf("read through a blackholed link: %d bytes, err %v; want nothing (a timeout)", n, err)
	}
	// A new dial is accepted at the TCP level, but carries nothing.
	c2 := dial(t, l.Addr())
	c2.Write([]byte("new"))
	c2.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if n, err := c2.Read(make([]byte, 3)); !isTimeout(err) {
		t.Fatalf("read on a new connection through a blackholed link: %d bytes, err %v; want a timeout", n, err)
	}
	if err := l.Heal(); err != nil {
		t.Fatal(err)
	}
	// What was held is delivered after the heal, on both connections.
	for _, x := range []struct {
		c    net.Conn
		want string
	}{{c, "held"}, {c2, "new"}} {
		x.c.SetReadDeadline(time.Now().Add(hang))
		b := make([]byte, len(x.want))
		if _, err := io.ReadFull(x.c, b); err != nil || string(b) != x.want {
			t.Fatalf("after heal read %q, %v; want %q", b, err, x.want)
		}
	}
	roundTrip(t, c)
}

func TestLinkCloseDuringBlackhole(t *testing.T) {
	l, err := NewLink(server(t, echo), LinkOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, l.Addr())
	roundTrip(t, c)
	l.Cut(Blackhole)
	c.Write([]byte("x"))
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(hang))
	if _, err := c.Read(make([]byte, 1)); err == nil || isTimeout(err) {
		t.Fatalf("read after Close: %v, want EOF or reset", err)
	}
	if err := l.Cut(Refuse); !errors.Is(err, ErrClosed) {
		t.Fatalf("Cut after Close: %v, want ErrClosed", err)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, os.ErrDeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}
