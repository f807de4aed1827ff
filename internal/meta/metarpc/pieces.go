package metarpc

import (
	"encoding/binary"
	"fmt"
	"log/slog"
	"net"

	"golang.org/x/net/http2/hpack"
)

// piecesConn closes the connection of a peer that sends a request in tiny
// pieces. grpc-go keeps the payload of every DATA frame it receives as a
// buffer of its own, about 45 bytes of heap for a frame of a few bytes, so
// a request sent a byte per frame costs the server many times its size and
// the byte budget (budget.go) would not bound what it holds. piecesConn
// reads the client's side of the HTTP/2 connection as it passes (after TLS:
// it wraps the plaintext) and follows each stream's gRPC messages by their
// length prefixes. A legitimate sender cuts a message only at the 16 KiB
// frame limit or where a flow-control window ends, so its pieces average
// kilobytes; a message still unfinished after more than pieceSlack pieces
// averaging under minPiece bytes ends the connection, as does a peer with
// more than maxPartial streams holding a started message.
//
// It also decodes each call's headers (HPACK, as the transport does) to
// learn its method, so that a message larger than that method's maximum
// (methodMaxima; a callback Ack is a few bytes) is refused on its length
// prefix, before gRPC reads it: piecesConn raises the length's top byte on
// its way to gRPC, whose own check (MaxRecvMsg) then fails the call with
// ResourceExhausted before it opens the call's window or allocates a
// byte of the message; the rest of that stream's data is not followed.
// Where the top byte already went to gRPC in an earlier read (a prefix cut
// between reads), the connection is closed instead. The byte budget thus
// charges a read its method's maximum, not MaxRecvMsg, and a session's
// callback stream waiting for its next Ack holds almost nothing.
type piecesConn struct {
	net.Conn
	log  *slog.Logger
	peer string

	preface int     // bytes of the client preface still to pass
	hdr     [9]byte // the frame header being read
	hdrN    int
	inFrame bool
	ftype   byte
	flags   byte
	stream  uint32
	left    int // payload bytes of the frame still to come
	padLen  int // padding at the end of a padded DATA frame (-1: not read yet)
	failed  error
	msgs    map[uint32]*partialMsg // streams with a message begun, not done

	hpack   *hpack.Decoder
	block   []byte            // the payload of the HEADERS or CONTINUATION frame being read
	path    string            // :path of the header block being decoded
	bounded map[uint32]int64  // streams of a method with a smaller maximum message; dropped: refused
	maxima  map[string]int64  // the largest message by method path (methodMaxima)
	paths   map[uint32]string // the method of each bounded stream, for the log
	reads   int               // scans so far: which read a prefix byte came in
	refused func(peer, method string, size, most int64)
}

// dropped marks in piecesConn.bounded a stream whose message was refused:
// its remaining data is not followed.
const dropped = -1

// partialMsg is a stream's gRPC message in progress.
type partialMsg struct {
	prefix  [5]byte
	prefixN int   // bytes of the length prefix seen; 5 once the body runs
	top     *byte // the length's top byte in the buffer of read topRead
	topRead int
	left    int64 // body bytes still to come
	got     int64 // body bytes seen
	pieces  int   // DATA frames that ended inside this message
}

const (
	pieceSlack = 64
	minPiece   = 512
	maxPartial = 4 * DefaultMaxStreams
	// HTTP/2 (RFC 9113): frame types and flags read here.
	frameData         = 0x0
	frameHeaders      = 0x1
	frameRSTStream    = 0x3
	frameContinuation = 0x9
	flagEndStream     = 0x1
	flagEndHeaders    = 0x4
	flagPadded        = 0x8
	flagPriority      = 0x20
	// maxHeaderFrame bounds a header frame's payload kept to decode: the
	// transport accepts frames of 16 KiB (its SETTINGS_MAX_FRAME_SIZE).
	maxHeaderFrame = 16 << 10
)

// newPiecesConn watches c; maxima are the methods' largest messages by
// path, refused is told of each message refused on its prefix (nil: none).
func newPiecesConn(c net.Conn, log *slog.Logger, maxima map[string]int64, refused func(peer, method string, size, most int64)) *piecesConn {
	p := &piecesConn{Conn: c, log: log, peer: c.RemoteAddr().String(), maxima: maxima, refused: refused}
	p.reset()
	return p
}

// reset readies the scanner for a new connection's bytes.
func (c *piecesConn) reset() {
	c.preface = 24
	c.msgs = map[uint32]*partialMsg{}
	c.bounded = map[uint32]int64{}
	c.paths = map[uint32]string{}
	c.hpack = hpack.NewDecoder(4096, func(f hpack.HeaderField) { // the HTTP/2 default table size, which gRPC keeps
		if f.Name == ":path" {
			c.path = f.Value
		}
	})
	c.hpack.SetMaxStringLength(maxHeaderList)
}

// Read passes what the peer sent to gRPC, ending the connection with an
// error once the peer is found sending tiny pieces.
func (c *piecesConn) Read(p []byte) (int, error) {
	if c.failed != nil {
		return 0, c.failed
	}
	n, err := c.Conn.Read(p)
	if n > 0 {
		if why := c.scan(p[:n]); why != "" {
			c.failed = fmt.Errorf("metarpc: connection of %s closed: %s", c.peer, why)
			c.log.Warn("meta rpc closed a connection", "peer", c.peer, "why", why)
			c.Conn.Close()
			return 0, c.failed
		}
	}
	return n, err
}

// scan follows frames through b; it returns why the peer is refused, or "".
func (c *piecesConn) scan(b []byte) string {
	c.reads++
	for len(b) > 0 {
		if c.preface > 0 {
			k := min(c.preface, len(b))
			c.preface -= k
			b = b[k:]
			continue
		}
		if !c.inFrame {
			k := copy(c.hdr[c.hdrN:], b)
			c.hdrN += k
			b = b[k:]
			if c.hdrN < len(c.hdr) {
				continue
			}
			c.hdrN = 0
			c.inFrame = true
			c.left = int(c.hdr[0])<<16 | int(c.hdr[1])<<8 | int(c.hdr[2])
			c.ftype, c.flags = c.hdr[3], c.hdr[4]
			c.stream = binary.BigEndian.Uint32(c.hdr[5:]) & 0x7fffffff
			c.padLen = 0
			if c.ftype == frameData && c.flags&flagPadded != 0 && c.left > 0 {
				c.padLen = -1
			}
		} else {
			switch {
			case c.ftype == frameHeaders || c.ftype == frameContinuation:
				k := min(c.left, len(b))
				if len(c.block)+k > maxHeaderFrame {
					return fmt.Sprintf("a header frame of more than %d bytes", maxHeaderFrame)
				}
				c.block = append(c.block, b[:k]...)
				c.left -= k
				b = b[k:]
			case c.ftype != frameData:
				k := min(c.left, len(b))
				c.left -= k
				b = b[k:]
			case c.padLen < 0: // the pad length, first byte of a padded frame
				c.left--
				c.padLen = min(int(b[0]), c.left) // more is gRPC's protocol error to report
				b = b[1:]
			case c.left > c.padLen: // data
				k := min(c.left-c.padLen, len(b))
				if why := c.feed(b[:k]); why != "" {
					return why
				}
				c.left -= k
				b = b[k:]
			default: // padding
				k := min(c.left, len(b))
				c.left -= k
				b = b[k:]
			}
		}
		if c.inFrame && c.left <= 0 && c.padLen >= 0 {
			c.inFrame = false
			if why := c.endFrame(); why != "" {
				return why
			}
		}
	}
	return ""
}

// feed follows the gRPC messages of the current frame's stream through d;
// it returns why the peer is refused, or "".
func (c *piecesConn) feed(d []byte) string {
	if c.bounded[c.stream] == dropped {
		return ""
	}
	m := c.msgs[c.stream]
	for len(d) > 0 {
		if m == nil {
			m = &partialMsg{}
			c.msgs[c.stream] = m
		}
		if m.prefixN < len(m.prefix) {
			if m.prefixN <= 1 && len(d) > 1-m.prefixN {
				m.top, m.topRead = &d[1-m.prefixN], c.reads
			}
			k := copy(m.prefix[m.prefixN:], d)
			m.prefixN += k
			d = d[k:]
			if m.prefixN < len(m.prefix) {
				continue
			}
			m.left = int64(binary.BigEndian.Uint32(m.prefix[1:]))
			top, topRead := m.top, m.topRead
			m.top = nil
			if most, ok := c.bounded[c.stream]; ok && m.left > most {
				if top == nil || topRead != c.reads {
					return fmt.Sprintf("a message of %d bytes on a stream whose messages are at most %d", m.left, most)
				}
				*top = 0xff // gRPC refuses it on its length: more than MaxRecvMsg
				if c.refused != nil {
					c.refused(c.peer, c.paths[c.stream], m.left, most)
				}
				delete(c.msgs, c.stream)
				c.bounded[c.stream] = dropped
				return ""
			}
		}
		k := min(m.left, int64(len(d)))
		m.left -= k
		m.got += k
		d = d[k:]
		if m.left == 0 { // the message is done; the next starts afresh
			*m = partialMsg{}
		}
	}
	return ""
}

// endHeaders decodes a header frame's block fragment; at the end of the
// block it notes a stream whose method bounds its messages.
func (c *piecesConn) endHeaders() string {
	frag := c.block
	c.block = c.block[:0]
	if c.ftype == frameHeaders {
		off, pad := 0, 0
		if c.flags&flagPadded != 0 {
			if len(frag) == 0 {
				return "a malformed HEADERS frame"
			}
			pad, off = int(frag[0]), 1
		}
		if c.flags&flagPriority != 0 {
			off += 5
		}
		if off+pad > len(frag) {
			return "a malformed HEADERS frame"
		}
		frag = frag[off : len(frag)-pad]
		c.path = ""
	}
	if _, err := c.hpack.Write(frag); err != nil {
		return "undecodable headers: " + err.Error()
	}
	if c.flags&flagEndHeaders == 0 {
		return ""
	}
	if err := c.hpack.Close(); err != nil {
		return "undecodable headers: " + err.Error()
	}
	if most, ok := c.maxima[c.path]; ok {
		c.bounded[c.stream] = most
		c.paths[c.stream] = c.path
		if len(c.bounded) > maxPartial {
			return fmt.Sprintf("more than %d streams open", maxPartial)
		}
	}
	c.path = ""
	return ""
}

// endFrame counts a DATA frame that ended inside a message.
func (c *piecesConn) endFrame() string {
	switch c.ftype {
	case frameHeaders, frameContinuation:
		return c.endHeaders()
	case frameRSTStream:
		c.forget(c.stream)
		return ""
	case frameData:
	default:
		return ""
	}
	if c.flags&flagEndStream != 0 {
		delete(c.bounded, c.stream)
		delete(c.paths, c.stream)
	}
	m := c.msgs[c.stream]
	if m == nil {
		return ""
	}
	if c.flags&flagEndStream != 0 || m.prefixN == 0 {
		delete(c.msgs, c.stream)
		return ""
	}
	m.pieces++
	if m.pieces > pieceSlack && m.got < int64(m.pieces)*minPiece {
		return fmt.Sprintf("a request in tiny pieces (%d bytes in %d DATA frames so far)", m.got, m.pieces)
	}
	if len(c.msgs) > maxPartial {
		return fmt.Sprintf("more than %d requests begun and not finished", maxPartial)
	}
	return ""
}

// forget drops what is followed of a stream that ended.
func (c *piecesConn) forget(stream uint32) {
	delete(c.msgs, stream)
	delete(c.bounded, stream)
	delete(c.paths, stream)
}
