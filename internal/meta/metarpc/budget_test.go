package metarpc_test

import (
	"bytes"
	"context"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"tessera/internal/meta"
	"tessera/internal/meta/metarpc"
)

// staller is a hostile HTTP/2 client: from its own loopback address it
// opens calls whose length prefix announces size bytes and sends every byte
// the server's flow control lets it, but the last, so that the server holds
// what it received for as long as the connection lives. It honours flow
// control (a peer that does not is cut off by the transport itself).
type staller struct {
	c     net.Conn
	fr    *http2.Framer
	wmu   sync.Mutex // guards writes on fr
	size  uint32
	chunk int // largest DATA frame it sends

	mu      sync.Mutex
	cond    *sync.Cond
	ready   bool // the server's settings are in
	closed  bool
	connWin int64
	initWin int64
	streams map[uint32]*stalledCall
	refused []string // grpc-message of calls ended with ResourceExhausted
	done    sync.WaitGroup
}

type stalledCall struct {
	win    int64
	sent   int64 // bytes of the message sent, prefix included
	ended  bool
	prefix bool
}

// stall opens n such calls from local (an IP) to addr: commits, the one
// method whose requests may be as large as MaxRecvMsg.
func stall(t *testing.T, local, addr string, n int, size uint32) *staller {
	t.Helper()
	return stallPieces(t, local, addr, n, size, 16<<10)
}

// stallPieces is stall sending DATA frames of at most chunk bytes.
func stallPieces(t *testing.T, local, addr string, n int, size uint32, chunk int) *staller {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	s := &staller{c: c, fr: http2.NewFramer(c, c), size: size, chunk: chunk, connWin: 65535, initWin: 65535, streams: map[uint32]*stalledCall{}}
	s.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	s.cond = sync.NewCond(&s.mu)
	t.Cleanup(func() { c.Close(); s.done.Wait() })
	if _, err := c.Write([]byte(http2.ClientPreface)); err != nil {
		t.Fatal(err)
	}
	if err := s.fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for i := range n {
		hb.Reset()
		for _, f := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":path", "/tessera.meta.v1.FSService/Commit"},
			{":authority", addr}, {"content-type", "application/grpc"}, {"te", "trailers"}, {"tessera-protocol", "2"}} {
			enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
		}
		id := uint32(2*i + 1)
		s.streams[id] = &stalledCall{win: -1}
		if err := s.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: hb.Bytes(), EndHeaders: true}); err != nil {
			t.Fatal(err)
		}
	}
	s.done.Add(2)
	go s.read()
	go s.write()
	return s
}

// read follows the server's frames: settings, windows, ends of calls.
func (s *staller) read() {
	defer s.done.Done()
	for {
		f, err := s.fr.ReadFrame()
		s.mu.Lock()
		if err != nil {
			s.closed = true
			s.cond.Broadcast()
			s.mu.Unlock()
			return
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				if v, ok := f.Value(http2.SettingInitialWindowSize); ok {
					s.initWin = int64(v)
				}
				s.ready = true
				s.wmu.Lock()
				s.fr.WriteSettingsAck()
				s.wmu.Unlock()
			}
		case *http2.WindowUpdateFrame:
			if f.StreamID == 0 {
				s.connWin += int64(f.Increment)
			} else if sc := s.streams[f.StreamID]; sc != nil {
				sc.win += int64(f.Increment)
			}
		case *http2.RSTStreamFrame:
			if sc := s.streams[f.StreamID]; sc != nil {
				sc.ended = true
			}
		case *http2.MetaHeadersFrame:
			if sc := s.streams[f.StreamID]; sc != nil && f.StreamEnded() {
				sc.ended = true
				if metaValue(f, "grpc-status") == "8" {
					s.refused = append(s.refused, metaValue(f, "grpc-message"))
				}
			}
		case *http2.PingFrame:
			if !f.IsAck() {
				s.wmu.Lock()
				s.fr.WritePing(true, f.Data)
				s.wmu.Unlock()
			}
		}
		s.cond.Broadcast()
		s.mu.Unlock()
	}
}

// write sends what the windows allow until every call is stalled one byte
// short of its message, ended, or the connection closed.
func (s *staller) write() {
	defer s.done.Done()
	total := int64(s.size) + 5
	chunk := make([]byte, s.chunk)
	prefix := []byte{0, byte(s.size >> 24), byte(s.size >> 16), byte(s.size >> 8), byte(s.size)}
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		for !s.ready && !s.closed {
			s.cond.Wait()
		}
		if s.closed {
			return
		}
		progress, pending := false, false
		for id, sc := range s.streams {
			if sc.win < 0 {
				sc.win += 1 + s.initWin
			}
			if sc.ended || sc.sent >= total-1 {
				continue
			}
			pending = true
			n := min(sc.win, s.connWin, int64(len(chunk)), total-1-sc.sent)
			if n <= 0 {
				continue
			}
			buf := chunk[:n]
			for i := range buf { // the length prefix, then zeros
				buf[i] = 0
				if off := sc.sent + int64(i); off < int64(len(prefix)) {
					buf[i] = prefix[off]
				}
			}
			sc.win -= n
			s.connWin -= n
			sc.sent += n
			s.mu.Unlock()
			s.wmu.Lock()
			err := s.fr.WriteData(id, false, buf)
			s.wmu.Unlock()
			s.mu.Lock()
			if err != nil {
				return
			}
			progress = true
		}
		if !pending {
			return
		}
		if !progress {
			s.cond.Wait()
		}
	}
}

// state counts the calls: sent all but the last byte, refused, and stalled
// on a window that the server will open only when it reads them.
func (s *staller) state() (full, refused, windowed int, msgs []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	total := int64(s.size) + 5
	for _, sc := range s.streams {
		switch {
		case sc.ended:
		case sc.sent >= total-1:
			full++
		case sc.sent >= s.initWin && sc.win == 0:
			windowed++
		}
	}
	return full, len(s.refused), windowed, append([]string(nil), s.refused...)
}

// TestInFlightPerPeer: many connections from one address open calls that
// announce the largest message and stall one byte short. The calls past
// the peer's cap are refused with ResourceExhausted naming the peer and the
// limit; only as many requests as the peer's byte budget holds are read,
// the others wait with no more than a stream window of data; the server's
// heap stays under the bound; a client on another address is served all
// along; and everything comes back when the attacker goes.
//
// Without the budgets (before this test) every one of the 48 admitted
// calls got its window opened to 1 MiB and was read: the heap grew by
// some 48 MiB, over the 15 MiB bound.
func TestInFlightPerPeer(t *testing.T) {
	ctx := context.Background()
	const (
		msg       = 1 << 20 // MaxRecvMsg
		budget    = 4 * msg // MaxInFlightPerPeer: four reads at once
		perPeer   = 48      // MaxStreamsPerPeer
		conns     = 8
		perConn   = 8
		window    = 64 << 10 // the server's stream window
		attacker  = "127.0.0.2"
		heapBound = budget + perPeer*window + 8<<20 // plus goroutines, framers, pools
	)
	probe := &metarpc.BudgetProbe{}
	addr, logs := serveOpts(t, newService(t), metarpc.ServeOptions{
		MaxRecvMsg: msg, MaxInFlightPerPeer: budget, MaxStreamsPerPeer: perPeer, MaxConnsPerPeer: conns,
	}.ProbeBudgets(probe))
	good := dial(t, addr) // from 127.0.0.1
	f, err := good.Create(ctx, meta.CreateReq{Parent: meta.RootIno, Name: "f", Mode: syscall.S_IFREG | 0644})
	if err != nil {
		t.Fatal(err)
	}
	base := heapInUse()

	var ss []*staller
	for range conns {
		ss = append(ss, stall(t, attacker, addr, perConn, msg))
	}
	// Wait until the attack has done all it can: the budget is full, the
	// other admitted calls wait with their window's worth sent, the rest
	// are refused. A minute is a hang.
	wantRefused := conns*perConn - perPeer
	var full, refused, windowed int
	var msgs []string
	var use metarpc.BudgetUse
	for i := 0; ; i++ {
		full, refused, windowed, msgs = 0, 0, 0, nil
		for _, s := range ss {
			fu, re, wi, ms := s.state()
			full, refused, windowed, msgs = full+fu, refused+re, windowed+wi, append(msgs, ms...)
		}
		use = probe.Use(attacker)
		if full == budget/msg && refused == wantRefused && windowed == perPeer-full &&
			use.Bytes == budget && use.Waiting == perPeer-full && use.Streams == perPeer {
			break
		}
		if i == 600 {
			t.Fatalf("attack did not settle: %d calls sent in full (want %d), %d refused (want %d), %d waiting on a window (want %d); server: %+v",
				full, budget/msg, refused, wantRefused, windowed, perPeer-budget/msg, use)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if want := "meta rpc: " + attacker + " has 48 calls open, the most one peer may (MaxStreamsPerPeer 48)"; !strings.Contains(strings.Join(msgs, "\n"), want) {
		t.Errorf("refusals say %q, want %q", msgs[0], want)
	}
	if !strings.Contains(logs.String(), "too many calls open") {
		t.Errorf("no refused call logged:\n%s", logs)
	}
	// Another address is served while the attacker holds its budget.
	for range 20 {
		if _, err := good.GetAttr(ctx, f.Ino); err != nil {
			t.Fatalf("a client on 127.0.0.1 during the attack: %v", err)
		}
	}
	if grew := int64(heapInUse()) - int64(base); grew > heapBound {
		t.Errorf("server heap grew by %d MiB under attack, bound %d MiB", grew>>20, heapBound>>20)
	} else {
		t.Logf("heap grew by %d KiB under attack (bound %d MiB)", grew>>10, heapBound>>20)
	}

	// The attacker goes: its calls end and their memory comes back.
	for _, s := range ss {
		s.c.Close()
		s.done.Wait()
	}
	for i := 0; probe.Use(attacker) != (metarpc.BudgetUse{}); i++ {
		if i == 600 {
			t.Fatalf("the attacker's calls are still charged after it left: %+v", probe.Use(attacker))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if grew := int64(heapInUse()) - int64(base); grew > 4<<20 {
		t.Errorf("server heap still %d MiB over its start after the attacker left", grew>>20)
	}
	if _, err := good.GetAttr(ctx, f.Ino); err != nil {
		t.Fatalf("after the attack: %v", err)
	}
}

// TestBudgetUnderLoad: with the smallest byte budget (two of the largest
// messages), one address's callback streams (polls waiting in the service,
// and streams whose poll returned, the server waiting for their next Ack)
// hold almost nothing, and a burst of concurrent calls from the same
// address all succeed: a read that does not fit waits for the one before
// it, it is not refused. Before Acks were bounded (pieces.go), a stream
// waiting for its next Ack was charged MaxRecvMsg: two of them took the
// whole budget and the burst's calls waited out their deadline.
func TestBudgetUnderLoad(t *testing.T) {
	ctx := context.Background()
	const msg = 1 << 20
	probe := &metarpc.BudgetProbe{}
	addr, _ := serveOpts(t, newService(t), metarpc.ServeOptions{MaxRecvMsg: msg, MaxInFlightPerPeer: 2 * msg}.ProbeBudgets(probe))
	c := dial(t, addr)
	f, err := c.Create(ctx, meta.CreateReq{Parent: meta.RootIno, Name: "f", Mode: syscall.S_IFREG | 0644})
	if err != nil {
		t.Fatal(err)
	}

	const sessions = 4 // of each kind
	// Polls that wait in the service until stopped (or a callback comes:
	// then their stream waits for the next Ack).
	waiting, err := metarpc.Dial(addr, metarpc.DialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer waiting.Close()
	pctx, stop := context.WithCancel(ctx)
	var polls sync.WaitGroup
	for range sessions {
		si, err := waiting.OpenSession(ctx)
		if err != nil {
			t.Fatal(err)
		}
		polls.Add(1)
		go func() {
			defer polls.Done()
			waiting.Callbacks(pctx, si.ID, 0, 5*time.Minute) // ends when stopped
		}()
	}
	t.Cleanup(func() { stop(); polls.Wait() })
	// Sessions whose poll returned at once: their streams stay open, the
	// server waiting for the next Ack.
	idle, err := metarpc.Dial(addr, metarpc.DialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	for range sessions {
		si, err := idle.OpenSession(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := idle.Callbacks(ctx, si.ID, 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; probe.Use("127.0.0.1").Streams < 2*sessions; i++ {
		if i == 600 {
			t.Fatalf("the polls did not start: %+v", probe.Use("127.0.0.1"))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if u := probe.Use("127.0.0.1"); u.Bytes >= msg {
		t.Fatalf("%d callback streams hold %d bytes of a %d-byte budget", 2*sessions, u.Bytes, 2*msg)
	}

	const calls = 200
	errs := make(chan error, calls)
	var wg sync.WaitGroup
	for i := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			if i%2 == 0 {
				_, err = c.GetAttr(ctx, f.Ino)
			} else {
				err = c.SetXattr(ctx, f.Ino, "user.k", make([]byte, 1000), 0)
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("a call of a busy but well-behaved peer: %v (server: %+v)", err, probe.Use("127.0.0.1"))
		}
	}
	// Finished calls give back all they held: only the callback streams
	// remain, and nothing once they end. (A call's stream is given back
	// just after its reply is sent: wait.)
	for i := 0; ; i++ {
		u := probe.Use("127.0.0.1")
		if u.Streams == 2*sessions && u.Waiting == 0 && u.Bytes < msg {
			break
		}
		if i == 600 {
			t.Fatalf("after the burst the address holds %+v, want only the %d callback streams", u, 2*sessions)
		}
		time.Sleep(100 * time.Millisecond)
	}
	stop()
	polls.Wait()
	waiting.Close()
	idle.Close()
	for i := 0; probe.Use("127.0.0.1") != (metarpc.BudgetUse{}); i++ {
		if i == 600 {
			t.Fatalf("the ended callback streams are still charged: %+v", probe.Use("127.0.0.1"))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestBudgetOptions: bounds that cannot work are refused by Serve, naming
// the option.
func TestBudgetOptions(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	err = metarpc.Serve(ln, newService(t), metarpc.ServeOptions{MaxRecvMsg: 1 << 20, MaxInFlightPerPeer: 1 << 20})
	if err == nil || !strings.Contains(err.Error(), "MaxInFlightPerPeer 1048576 is less than twice MaxRecvMsg 1048576") {
		t.Fatalf("Serve with a budget of one message: %v", err)
	}
}

// TestRequestInPieces: a peer sending its requests a few bytes per DATA
// frame (each frame costing the server far more heap than its bytes) has
// its connection closed, the reason logged, while a client on another
// address is served. Before piecesConn the connection stayed open and the
// server kept every piece.
func TestRequestInPieces(t *testing.T) {
	ctx := context.Background()
	addr, logs := serveOpts(t, newService(t), metarpc.ServeOptions{})
	good := dial(t, addr)
	s := stallPieces(t, "127.0.0.2", addr, 4, metarpc.DefaultMaxRecvMsg, 3)
	for i := 0; ; i++ {
		s.mu.Lock()
		closed := s.closed
		s.mu.Unlock()
		if closed {
			break
		}
		if i == 600 {
			t.Fatal("the connection sending 3-byte pieces is still open after a minute")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !strings.Contains(logs.String(), "a request in tiny pieces") {
		t.Errorf("closing the connection was not logged with why:\n%s", logs)
	}
	if _, err := good.GetAttr(ctx, meta.RootIno); err != nil {
		t.Fatalf("a client on 127.0.0.1: %v", err)
	}
}
