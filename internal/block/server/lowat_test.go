package server

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"tessera/internal/clock"
	"tessera/internal/lowat"
)

// lowatServer serves PUTs whose handler reads the body with readFull and
// reports how many reads it took; the connection's context carries the
// conn, as NewHTTPServer's does. Its clock never moves: every body seems
// to come at a quick pace, however busy the machine (a read woken late
// counted as a slow body and the mark fell: the read count depended on
// the load).
func lowatServer(t *testing.T) (addr string, reads <-chan int) {
	t.Helper()
	clk := clock.NewFake(time.Unix(0, 0))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan int, 16)
	srv := &http.Server{ConnContext: connContext, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data := make([]byte, r.ContentLength)
		n, err := readFull(clk, r, r.Body, data)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		for i, b := range data {
			if b != byte(i) {
				http.Error(w, fmt.Sprintf("byte %d is %d", i, b), http.StatusBadRequest)
				return
			}
		}
		ch <- n
		w.WriteHeader(http.StatusCreated)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String(), ch
}

// trickle sends a PUT of n bytes over c in 16 KiB pieces 200 µs apart (a
// rate-limited link's pace) and returns the reply's status line.
func trickle(t *testing.T, c net.Conn, br *bufio.Reader, n int) string {
	t.Helper()
	body := make([]byte, n)
	for i := range body {
		body[i] = byte(i)
	}
	if _, err := fmt.Fprintf(c, "PUT /x HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", n); err != nil {
		t.Fatal(err)
	}
	for off := 0; off < n; off += 16 << 10 {
		if _, err := c.Write(body[off:min(n, off+16<<10)]); err != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Microsecond)
	}
	// Only a mark past the body's end, waiting for bytes never sent, hits
	// this bound.
	_ = c.SetReadDeadline(time.Now().Add(time.Minute))
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("PUT of %d bytes: no reply (a low-water mark past the body's end?): %v", n, err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.Status + " " + string(bytes.TrimSpace(b))
}

// TestReadFullLowWaterMark: a body arriving in small pieces is read in a
// few large reads, and every body ends, whatever its length against the
// mark, with the connection usable for the next request.
func TestReadFullLowWaterMark(t *testing.T) {
	addr, reads := lowatServer(t)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)

	const big = 4 << 20
	if st := trickle(t, c, br, big); !strings.HasPrefix(st, "201") {
		t.Fatalf("PUT 4 MiB: %s", st)
	}
	// 256 pieces; woken per piece the reader would take about as many reads.
	if n := <-reads; n > 2*big/lowat.Chunk+8 {
		t.Errorf("4 MiB arriving in 16 KiB pieces took %d reads, want at most %d", n, 2*big/lowat.Chunk+8)
	}
	// Lengths around the mark and the header slack, on the same connection.
	for _, n := range []int{2 * lowat.Chunk, 2*lowat.Chunk + 1, 3*lowat.Chunk - requestBuffer, 3*lowat.Chunk + 100, 10, 1 << 20} {
		if st := trickle(t, c, br, n); !strings.HasPrefix(st, "201") {
			t.Fatalf("PUT %d bytes: %s", n, st)
		}
		<-reads
	}
}
