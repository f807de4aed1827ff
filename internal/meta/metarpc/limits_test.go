package metarpc_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"net"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"tessera/internal/meta"
	"tessera/internal/meta/metarpc"
)

// heapBound is what the attacks of TestHostilePeers may leave on the
// server's heap (after GC, in this process): the issue measured 1.7 GB for
// three gob frames announcing 1000 MiB each.
const heapBound = 32 << 20

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// waitClosed reads from c until the server closes it; the deadline is only
// for a hang.
func waitClosed(t *testing.T, c net.Conn, what string) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(time.Minute))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("%s: still open after a minute", what)
	}
}

// announceHuge opens an HTTP/2 connection and sends n calls whose gRPC
// length prefix announces size bytes, without the bytes.
func announceHuge(t *testing.T, addr string, n int, size uint32) net.Conn {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(c, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(c, c)
	if err := fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for i := range n {
		hb.Reset()
		for _, f := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":path", "/tessera.meta.v1.FSService/SetXattr"},
			{":authority", addr}, {"content-type", "application/grpc"}, {"te", "trailers"}, {"tessera-protocol", "2"}} {
			enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
		}
		id := uint32(2*i + 1)
		if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: hb.Bytes(), EndHeaders: true}); err != nil {
			t.Fatal(err)
		}
		prefix := []byte{0, byte(size >> 24), byte(size >> 16), byte(size >> 8), byte(size)}
		if err := fr.WriteData(id, false, append(prefix, make([]byte, 1000)...)); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// refusedStreams reads c's frames until its three streams ended and
// counts those that ended with grpc-status 8 (ResourceExhausted).
func refusedStreams(t *testing.T, c net.Conn) int {
	fr := http2.NewFramer(c, c)
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	c.SetReadDeadline(time.Now().Add(time.Minute)) // a hang only
	ended, refused := map[uint32]bool{}, 0
	for len(ended) < 3 {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatalf("reading the refusals: %v", err)
		}
		switch f := f.(type) {
		case *http2.MetaHeadersFrame:
			if f.StreamEnded() {
				ended[f.StreamID] = true
				if metaValue(f, "grpc-status") == "8" {
					refused++
				}
			}
		case *http2.RSTStreamFrame:
			ended[f.StreamID] = true
		case *http2.GoAwayFrame:
			return refused
		}
	}
	return refused
}

func metaValue(f *http2.MetaHeadersFrame, name string) string {
	for _, h := range f.Fields {
		if h.Name == name {
			return h.Value
		}
	}
	return ""
}

// TestHostilePeers: idle connections past the cap, garbage bytes, calls
// announcing 1000 MiB and an oversized message are refused, while a client
// that was connected before keeps being served and the server's heap stays
// under heapBound.
func TestHostilePeers(t *testing.T) {
	ctx := context.Background()
	svc := newService(t)
	const maxConns = 16
	addr, logs := serveOpts(t, svc, metarpc.ServeOptions{MaxConns: maxConns, MaxConnsPerPeer: maxConns, HandshakeTimeout: 500 * time.Millisecond})
	good := dial(t, addr)
	f, err := good.Create(ctx, meta.CreateReq{Parent: meta.RootIno, Name: "f", Mode: syscall.S_IFREG | 0644})
	if err != nil {
		t.Fatal(err)
	}
	base := heapInUse()
	served := func(what string) {
		t.Helper()
		if _, err := good.GetAttr(ctx, f.Ino); err != nil {
			t.Fatalf("good client during %s: %v", what, err)
		}
	}

	// 200 idle connections: those past the cap are closed at accept, the
	// others once their handshake time is up.
	var idle []net.Conn
	for range 200 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		idle = append(idle, c)
	}
	served("an idle flood")
	for i, c := range idle {
		waitClosed(t, c, "idle connection")
		c.Close()
		if i%50 == 0 {
			served("an idle flood")
		}
	}
	if !bytes.Contains([]byte(logs.String()), []byte("too many connections")) {
		t.Errorf("no refused connection logged:\n%s", logs)
	}

	// Garbage instead of the HTTP/2 preface.
	for range 20 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		junk := make([]byte, 64<<10)
		rand.Read(junk)
		c.Write(junk)
		waitClosed(t, c, "garbage connection")
		c.Close()
	}
	served("garbage")

	// Three calls announcing 1000 MiB each, on a few connections.
	var huge []net.Conn
	for range 4 {
		huge = append(huge, announceHuge(t, addr, 3, 1000<<20))
	}
	served("calls announcing 1000 MiB")
	for _, c := range huge {
		if n := refusedStreams(t, c); n != 3 {
			t.Errorf("%d of 3 calls announcing 1000 MiB refused with ResourceExhausted", n)
		}
	}

	// An oversized message from a real client: refused, not an outage.
	_, err = good.Commit(ctx, meta.CommitReq{Ino: f.Ino, Changes: bigCommit(metarpc.DefaultMaxRecvMsg)})
	if err == nil || meta.Unavailable(err) || !errors.Is(err, syscall.EIO) {
		t.Fatalf("oversized commit: %v, want a refusal (EIO, no outage)", err)
	}
	served("an oversized message")

	if grew := int64(heapInUse()) - int64(base); grew > heapBound {
		t.Errorf("server heap grew by %d MiB under attack, bound %d MiB", grew>>20, heapBound>>20)
	} else {
		t.Logf("heap grew by %d KiB (bound %d MiB)", grew>>10, heapBound>>20)
	}
	for _, c := range huge {
		c.Close()
	}
}

// bigCommit is a commit of more than size bytes.
func bigCommit(size int) []meta.BlockChange {
	var cs []meta.BlockChange
	for i := 0; len(cs)*(meta.InlineMax/2) <= size; i++ {
		cs = append(cs, meta.BlockChange{Index: uint64(i), InlineNew: true, NewInline: make([]byte, meta.InlineMax/2)})
	}
	return cs
}

// TestConnectionsPerPeer: one address cannot take more than its share of
// the connection slots; connections past it are closed at accept and
// logged, and its slots come back when its connections close.
func TestConnectionsPerPeer(t *testing.T) {
	ctx := context.Background()
	addr, logs := serveOpts(t, newService(t), metarpc.ServeOptions{MaxConns: 100, MaxConnsPerPeer: 3})
	var cs []*metarpc.Client
	for range 3 {
		c := dial(t, addr)
		if _, err := c.GetAttr(ctx, meta.RootIno); err != nil {
			t.Fatal(err)
		}
		cs = append(cs, c)
	}
	extra, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	waitClosed(t, extra, "a fourth connection from 127.0.0.1")
	extra.Close()
	if !strings.Contains(logs.String(), "too many connections from 127.0.0.1 (3)") {
		t.Errorf("the refusal was not logged with its peer:\n%s", logs)
	}
	for _, c := range cs {
		if _, err := c.GetAttr(ctx, meta.RootIno); err != nil {
			t.Fatalf("a client within the cap: %v", err)
		}
	}
	cs[0].Close()
	for i := 0; ; i++ { // the server sees the close soon; a minute is a hang
		c, err := metarpc.Dial(addr, metarpc.DialOptions{})
		if err == nil {
			_, err = c.GetAttr(ctx, meta.RootIno)
			c.Close()
		}
		if err == nil {
			break
		}
		if i == 600 {
			t.Fatalf("no slot came back after a client closed: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
