package metarpc

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"testing"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc"

	pb "tessera/internal/meta/metarpc/metapb"
)

// headerBlocks encodes the headers of gRPC calls, sharing one HPACK table
// as a client's connection does.
type headerBlocks struct {
	buf bytes.Buffer
	enc *hpack.Encoder
}

func newHeaderBlocks() *headerBlocks {
	h := &headerBlocks{}
	h.enc = hpack.NewEncoder(&h.buf)
	return h
}

func (h *headerBlocks) call(method string) []byte {
	h.buf.Reset()
	for _, f := range [][2]string{{":method", "POST"}, {":scheme", "https"}, {":path", method},
		{":authority", "meta"}, {"content-type", "application/grpc"}, {"te", "trailers"}, {"tessera-protocol", "2"}} {
		h.enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	return append([]byte(nil), h.buf.Bytes()...)
}

// grpcMessage is a gRPC message of n body bytes: its length prefix, then
// the body.
func grpcMessage(n int) []byte {
	m := make([]byte, 5+n)
	m[1], m[2], m[3], m[4] = byte(n>>24), byte(n>>16), byte(n>>8), byte(n)
	return m
}

// scanInSlices feeds b to a piecesConn's scanner in random slices, as
// reads of a connection would, and returns the first refusal.
func scanInSlices(c *piecesConn, b []byte, rnd *rand.Rand) string {
	for len(b) > 0 {
		k := min(len(b), 1+rnd.IntN(4000))
		if why := c.scan(b[:k]); why != "" {
			return why
		}
		b = b[k:]
	}
	return ""
}

// TestPiecesLegitimate: what a gRPC client sends (messages whole or in
// frames of up to 16 KiB, a short piece where a window ends, padded
// frames, an empty frame ending a stream, control frames) is never taken
// for tiny pieces, however the reads cut it, and no stream stays tracked.
func TestPiecesLegitimate(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	var w bytes.Buffer
	w.WriteString(http2.ClientPreface)
	fr := http2.NewFramer(&w, nil)
	hb := newHeaderBlocks()
	fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 20})
	// Stream 1's headers padded, with a priority, and cut in a
	// CONTINUATION frame.
	block := hb.call(pb.FSService_Commit_FullMethodName)
	fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block[:10], PadLength: 7,
		Priority: http2.PriorityParam{StreamDep: 0, Weight: 15}})
	fr.WriteContinuation(1, true, block[10:])
	fr.WriteWindowUpdate(0, 1<<20)
	// Stream 1: a 4 MiB commit in 16 KiB frames, one cut short by a window,
	// some padded; the stream ended by an empty frame.
	big := grpcMessage(4 << 20)
	for i := 0; len(big) > 0; i++ {
		k := min(len(big), 16<<10)
		if i == 7 {
			k = 37
		}
		if i%5 == 0 {
			fr.WriteDataPadded(1, false, big[:k], make([]byte, 9))
		} else {
			fr.WriteData(1, false, big[:k])
		}
		big = big[k:]
		if i%16 == 0 {
			fr.WritePing(false, [8]byte{})
		}
	}
	fr.WriteData(1, true, nil)
	// Streams 3..: a thousand small calls, each a frame, on a stream of its own.
	for id := uint32(3); id < 2003; id += 2 {
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: hb.call(pb.FSService_GetAttr_FullMethodName), EndHeaders: true})
		fr.WriteData(id, true, grpcMessage(rnd.IntN(300)))
	}
	// A callback stream: many Acks, one frame each, never ended.
	fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 2005, BlockFragment: hb.call(pb.SessionsService_Callbacks_FullMethodName), EndHeaders: true})
	for range 1000 {
		fr.WriteData(2005, false, grpcMessage(12))
	}
	// A stream reset by its client in the middle of a message.
	fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 2007, BlockFragment: hb.call(pb.FSService_SetXattr_FullMethodName), EndHeaders: true})
	fr.WriteData(2007, false, grpcMessage(60 << 10)[:1000])
	fr.WriteRSTStream(2007, http2.ErrCodeCancel)

	c := testPieces()
	if why := scanInSlices(c, w.Bytes(), rnd); why != "" {
		t.Fatalf("legitimate traffic refused: %s", why)
	}
	if len(c.msgs) != 0 || c.inFrame {
		t.Errorf("after whole messages: %d streams still tracked, in a frame: %v", len(c.msgs), c.inFrame)
	}
	if len(c.bounded) != 1 || c.bounded[2005] != maxAck {
		t.Errorf("bounded streams %v, want the callback stream 2005 alone", c.bounded)
	}
}

// TestPiecesTiny: a message sent a few bytes per frame, even padded, is
// refused once it has more than pieceSlack pieces.
func TestPiecesTiny(t *testing.T) {
	for _, padded := range []bool{false, true} {
		var w bytes.Buffer
		w.WriteString(http2.ClientPreface)
		fr := http2.NewFramer(&w, nil)
		msg := grpcMessage(1 << 20)
		for i := 0; i < 2*pieceSlack; i++ {
			if padded {
				fr.WriteDataPadded(1, false, msg[3*i:3*i+3], make([]byte, 200))
			} else {
				fr.WriteData(1, false, msg[3*i:3*i+3])
			}
		}
		c := testPieces()
		why := scanInSlices(c, w.Bytes(), rand.New(rand.NewPCG(3, 4)))
		if !strings.Contains(why, "a request in tiny pieces") {
			t.Errorf("padded %v: 3-byte pieces: %q, want a refusal", padded, why)
		}
	}
}

// testPieces is the scanner of a meta server's connection.
func testPieces() *piecesConn {
	gs := grpc.NewServer()
	registerServices(gs, &server{})
	b := newBudgets(ServeOptions{MaxRecvMsg: DefaultMaxRecvMsg})
	maxima := methodMaxima(gs, DefaultMaxRecvMsg)
	b.learn(gs, maxima)
	c := &piecesConn{log: slog.New(slog.DiscardHandler), peer: "test", maxima: maxima}
	c.reset()
	return c
}

// TestPiecesRefuseOnPrefix: a message larger than its method can take
// (an Ack over 1 KiB; a lookup of a 15 MiB name) is refused on its length
// prefix, before gRPC reads it: the length's top byte is raised past
// MaxRecvMsg on its way to gRPC, which then fails the call alone without
// reading or allocating the message; the rest of the stream is not
// followed. A message within its method's maximum passes untouched. When
// the top byte went to gRPC in an earlier read, the connection is closed.
func TestPiecesRefuseOnPrefix(t *testing.T) {
	for _, tc := range []struct {
		method string
		size   int
		refuse bool
	}{
		{pb.SessionsService_Callbacks_FullMethodName, maxAck + 1, true},
		{pb.FSService_SetXattr_FullMethodName, maxAck + 1, false},
		{pb.FSService_SetXattr_FullMethodName, 68 << 10, false},
		{pb.FSService_SetXattr_FullMethodName, 15 << 20, true},
		{pb.FSService_Lookup_FullMethodName, 4 << 10, false},
		{pb.FSService_Lookup_FullMethodName, 15 << 20, true},
		{pb.FSService_Commit_FullMethodName, 15 << 20, false},
	} {
		var w bytes.Buffer
		w.WriteString(http2.ClientPreface)
		fr := http2.NewFramer(&w, nil)
		hb := newHeaderBlocks()
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: hb.call(tc.method), EndHeaders: true})
		fr.WriteData(1, false, grpcMessage(12))
		at := w.Len() + 9 // the second message's prefix, after its frame header
		fr.WriteData(1, false, grpcMessage(tc.size)[:1000])
		fr.WriteData(1, false, make([]byte, 1000)) // its body goes on
		c := testPieces()
		var told []string
		c.refused = func(_, method string, size, most int64) {
			told = append(told, fmt.Sprintf("%s %d>%d", method, size, most))
		}
		b := w.Bytes()
		if why := c.scan(b); why != "" {
			t.Errorf("%s, %d bytes: connection refused: %s", tc.method, tc.size, why)
			continue
		}
		got := int64(binary.BigEndian.Uint32(b[at+1:]))
		if refused := got > DefaultMaxRecvMsg; refused != tc.refuse {
			t.Errorf("%s, %d bytes: gRPC reads a length of %d, refused %v, want %v", tc.method, tc.size, got, refused, tc.refuse)
		}
		if tc.refuse && (len(told) != 1 || !strings.Contains(told[0], tc.method)) {
			t.Errorf("%s, %d bytes: told %q", tc.method, tc.size, told)
		}
		if !tc.refuse && got != int64(tc.size) {
			t.Errorf("%s, %d bytes: gRPC reads a length of %d", tc.method, tc.size, got)
		}
		// The same, its prefix's top byte in an earlier read.
		c = testPieces()
		why := c.scan(b[:at+2])
		if why == "" {
			why = c.scan(b[at+2:])
		}
		if got := why != ""; got != tc.refuse {
			t.Errorf("%s, %d bytes, prefix cut: %q, refused %v, want %v", tc.method, tc.size, why, got, tc.refuse)
		}
	}
}
