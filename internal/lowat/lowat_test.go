package lowat

import (
	"bytes"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"tessera/internal/clock"
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

// markReader reads from a socket and notes the low-water mark each read
// was made with: how many bytes the kernel waited for before waking it.
type markReader struct {
	c     net.Conn
	marks []int
}

func (m *markReader) Read(p []byte) (int, error) {
	raw, err := m.c.(syscall.Conn).SyscallConn()
	if err != nil {
		return 0, err
	}
	mark := -1
	_ = raw.Control(func(fd uintptr) {
		mark, _ = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVLOWAT)
	})
	m.marks = append(m.marks, mark)
	return m.c.Read(p)
}

// stepClock is a clock on which every reading is step later than the last:
// each read of a body seems to wait step for its bytes.
type stepClock struct {
	*clock.Fake
	step time.Duration
}

func (s stepClock) Now() time.Time {
	s.Advance(s.step)
	return s.Fake.Now()
}

func body(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i * 7)
	}
	return b
}

// TestFewReads: a body arriving at a quick pace (the clock sees every read
// end at once) is read in a few large reads, the mark rising to Chunk, intact,
// and a short message after it is read at once (the mark is back at one
// byte). The pace is the clock's, not the machine's: on a busy machine a
// read woken late used to count as a slow body and the mark fell.
func TestFewReads(t *testing.T) {
	src, dst := pair(t)
	want := body(4 << 20)
	go send(src, want, 16<<10, 200*time.Microsecond, []byte("next"))
	got := make([]byte, len(want))
	mr := &markReader{c: dst}
	reads, err := ReadFullClock(clock.NewFake(time.Unix(0, 0)), dst, mr, got, 0)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("ReadFull: %v (data equal: %v)", err, bytes.Equal(got, want))
	}
	if top := maxOf(mr.marks); top != Chunk {
		t.Errorf("highest low-water mark %d, want Chunk (%d); marks %v", top, Chunk, mr.marks)
	}
	// Each wake at the mark may be followed by one short read of what
	// arrived meanwhile: at most twice the reads of marks 32, 64, 128 KiB
	// then Chunk, against 256 reads if woken per piece.
	if limit := 2*len(want)/Chunk + 8; reads > limit {
		t.Errorf("4 MiB in 16 KiB pieces took %d reads, want at most %d", reads, limit)
	}
	t.Logf("%d reads", reads)
	// A bound on a wait for bytes already sent: only a broken mark hits it.
	_ = dst.SetReadDeadline(time.Now().Add(time.Minute))
	next := make([]byte, 4)
	if _, err := io.ReadFull(dst, next); err != nil || string(next) != "next" {
		t.Fatalf("the message after the body: %q, %v", next, err)
	}
	mark := 0
	raw, _ := dst.(syscall.Conn).SyscallConn()
	_ = raw.Control(func(fd uintptr) { mark, _ = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVLOWAT) })
	if mark != 1 {
		t.Errorf("low-water mark %d after the body, want 1", mark)
	}
}

// TestSlowBodyKeepsMoving: a body arriving slowly (every read waits 100 ms
// on the clock, past Window) is read with a falling mark, never above the
// first one: the reader is woken every few pieces, not once per Chunk (a
// watchdog that follows progress would otherwise see none for Chunk/rate).
func TestSlowBodyKeepsMoving(t *testing.T) {
	src, dst := pair(t)
	want := body(1 << 20)
	go send(src, want, 64<<10, 0, nil)
	got := make([]byte, len(want))
	mr := &markReader{c: dst}
	clk := stepClock{clock.NewFake(time.Unix(0, 0)), 100 * time.Millisecond}
	if _, err := ReadFullClock(clk, dst, mr, got, 0); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("ReadFull: %v", err)
	}
	if top := maxOf(mr.marks); top > startMark {
		t.Errorf("highest low-water mark %d for a slow body, want at most %d; marks %v", top, startMark, mr.marks)
	}
	if len(mr.marks) < 2 || mr.marks[1] != startMark/2 {
		t.Errorf("marks %v: want the second read at half the first mark (%d)", mr.marks, startMark/2)
	}
	t.Logf("marks %v", mr.marks)
}

func maxOf(xs []int) int {
	m := 0
	for _, x := range xs {
		m = max(m, x)
	}
	return m
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
