package home_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"tessera/internal/gateway/home"
	"tessera/internal/wan"
)

// countingProxy is a TCP proxy in front of an S3 endpoint that counts the
// connections opened through it and the HTTP/1.1 requests sent on them
// (their request lines), so that a test sees what a home operation costs
// in round trips to the endpoint.
type countingProxy struct {
	addr     string
	conns    atomic.Int64
	requests atomic.Int64
}

func newCountingProxy(t *testing.T, upstream string) *countingProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &countingProxy{addr: ln.Addr().String()}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var open []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range open {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", upstream)
			if err != nil {
				c.Close()
				continue
			}
			p.conns.Add(1)
			mu.Lock()
			open = append(open, c, u)
			mu.Unlock()
			wg.Add(2)
			go func() { defer wg.Done(); p.countRequests(u, c); u.Close() }()
			go func() { defer wg.Done(); io.Copy(c, u); c.Close() }()
		}
	}()
	return p
}

// countRequests copies the client's bytes to the endpoint, counting the
// request lines ("... HTTP/1.1\r\n") that pass, also across reads.
func (p *countingProxy) countRequests(dst io.Writer, src io.Reader) {
	marker := []byte(" HTTP/1.1\r\n")
	buf := make([]byte, 32<<10)
	var tail []byte
	for {
		n, err := src.Read(buf)
		if n > 0 {
			seen := append(tail, buf[:n]...)
			p.requests.Add(int64(bytes.Count(seen, marker)))
			tail = append([]byte(nil), seen[max(0, len(seen)-len(marker)+1):]...)
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// TestS3KeepsConnections: across a WAN a new connection to the endpoint
// costs a round trip (TCP; more with TLS) before its request, so the S3
// home keeps them. After a burst of 8 parallel ranged reads through a
// link of 30 ms round trip, a second burst opens no connection (net/http
// kept 2 per host by default: it opened 6), and the Stat that revalidates
// a file is one request on a kept connection. A directory asked for as
// one (StatKind, what revalidation does) is one request too, where Stat
// asks for a file of its name first.
func TestS3KeepsConnections(t *testing.T) {
	g := startVersityGW(t, "--keep-alive")
	link, err := wan.NewLink(g.Endpoint[len("http://"):], wan.LinkOptions{Latency: 15 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { link.Close() })
	px := newCountingProxy(t, link.Addr())
	ctx := context.Background()
	s, err := home.Open(ctx, g.bucket(t, "conns", "home", "http://"+px.addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	const n, size = 8, 64 << 10
	data := bytes.Repeat([]byte("0123456789abcdef"), n*size/16)
	if _, err := s.WriteFile(ctx, "f", bytes.NewReader(data), int64(len(data)), 0); err != nil {
		t.Fatal(err)
	}
	if err := s.Mkdir(ctx, "d", 0); err != nil {
		t.Fatal(err)
	}
	burst := func() {
		t.Helper()
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				b := make([]byte, size)
				if k, err := s.ReadAt(ctx, "f", b, int64(i*size)); k != size || (err != nil && err != io.EOF) {
					t.Errorf("ReadAt %d: %d bytes, %v", i, k, err)
				}
			}()
		}
		wg.Wait()
	}
	c0 := px.conns.Load()
	burst()
	t.Logf("the first burst of %d reads opened %d connections", n, px.conns.Load()-c0)
	c1 := px.conns.Load()
	burst()
	if d := px.conns.Load() - c1; d != 0 {
		t.Errorf("a second burst of %d parallel reads opened %d connections; want 0 (the first burst's kept)", n, d)
	}
	cost := func(what string, op func() (home.Attr, error), want home.Kind) {
		t.Helper()
		c, r := px.conns.Load(), px.requests.Load()
		a, err := op()
		if err != nil || a.Kind != want {
			t.Fatalf("%s: %+v, %v; want a %v", what, a, err, want)
		}
		if dc, dr := px.conns.Load()-c, px.requests.Load()-r; dc != 0 || dr != 1 {
			t.Errorf("%s: %d requests on %d new connections; want 1 request on a kept connection", what, dr, dc)
		}
	}
	cost("Stat of a file", func() (home.Attr, error) { return s.Stat(ctx, "f") }, home.KindFile)
	ks, ok := s.(home.KindStater)
	if !ok {
		t.Fatalf("%T is no home.KindStater", s)
	}
	cost("StatKind of a directory", func() (home.Attr, error) { return ks.StatKind(ctx, "d", home.KindDir) }, home.KindDir)
	cost("StatKind of a file", func() (home.Attr, error) { return ks.StatKind(ctx, "f", home.KindFile) }, home.KindFile)
	// Asked for as a directory, a file is still found (one request more).
	if a, err := ks.StatKind(ctx, "f", home.KindDir); err != nil || a.Kind != home.KindFile || a.Size != int64(len(data)) {
		t.Errorf("StatKind of file f as a directory: %+v, %v", a, err)
	}
	if _, err := ks.StatKind(ctx, "none", home.KindDir); !errors.Is(err, home.ErrNotFound) {
		t.Errorf("StatKind of a missing name: %v; want ErrNotFound", err)
	}
}
