package lowat

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"
)

// pair returns both ends of a loopback TCP connection.
func pair(t *testing.T) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	acc := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		acc <- c
	}()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server = <-acc
	if server == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

// send writes data to c in pieces of piece bytes, pause apart, then tail.
func send(c net.Conn, data []byte, piece int, pause time.Duration, tail []byte) {
	for off := 0; off < len(data); off += piece {
		if _, err := c.Write(data[off:min(len(data), off+piece)]); err != nil {
			return
		}
		time.Sleep(pause)
	}
	c.Write(tail)
}

// timedReader notes the longest time between two of its reads' returns.
type timedReader struct {
	r       io.Reader
	last    time.Time
	longest time.Duration
}

func (t *timedReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	now := time.Now()
	if !t.last.IsZero() {
		t.longest = max(t.longest, now.Sub(t.last))
	}
	t.last = now
	return n, err
}

func body(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i * 7)
	}
	return b
}

// TestFewReads: a body arriving in 16 KiB pieces is read in a few large
// reads, intact, and a short message after it is read at once (the mark
// is back at one byte).
func TestFewReads(t *testing.T) {
	src, dst := pair(t)
	want := body(4 << 20)
	go send(src, want, 16<<10, 200*time.Microsecond, []byte("next"))
	got := make([]byte, len(want))
	reads, err := ReadFull(dst, dst, got, 0)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("ReadFull: %v (data equal: %v)", err, bytes.Equal(got, want))
	}
	if limit := 2*len(want)/Chunk + 8; reads > limit {
		t.Errorf("4 MiB in 16 KiB pieces took %d reads, want at most %d", reads, limit)
	}
	t.Logf("%d reads", reads)
	_ = dst.SetReadDeadline(time.Now().Add(2 * time.Second))
	next := make([]byte, 4)
	if _, err := io.ReadFull(dst, next); err != nil || string(next) != "next" {
		t.Fatalf("the message after the body: %q, %v", next, err)
	}
}

// TestSlowBodyKeepsMoving: a body arriving slowly is still read every
// Window or so, not once per Chunk (a watchdog that follows progress would
// otherwise see none for Chunk/rate).
func TestSlowBodyKeepsMoving(t *testing.T) {
	src, dst := pair(t)
	want := body(1 << 20)
	go send(src, want, 64<<10, 60*time.Millisecond, nil) // ~1 MiB/s: Chunk every 240 ms
	got := make([]byte, len(want))
	tr := &timedReader{r: dst}
	if _, err := ReadFull(dst, tr, got, 0); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("ReadFull: %v", err)
	}
	if tr.longest > 200*time.Millisecond {
		t.Errorf("longest wait between reads %v; want about one 60 ms piece", tr.longest)
	}
	t.Logf("longest wait between reads: %v", tr.longest)
}

// TestShortBody: a body that ends before the mark ends with an error.
func TestShortBody(t *testing.T) {
	src, dst := pair(t)
	go func() {
		send(src, body(600<<10), 64<<10, 0, nil)
		src.Close()
	}()
	got := make([]byte, 1<<20)
	if _, err := ReadFull(dst, dst, got, 0); err != io.ErrUnexpectedEOF {
		t.Fatalf("ReadFull of a body cut at 600 KiB of 1 MiB: %v, want io.ErrUnexpectedEOF", err)
	}
}
