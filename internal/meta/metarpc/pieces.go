package metarpc

import (
	"encoding/binary"
	"fmt"
	"log/slog"
	"net"
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
}

// partialMsg is a stream's gRPC message in progress.
type partialMsg struct {
	prefix  [5]byte
	prefixN int   // bytes of the length prefix seen; 5 once the body runs
	left    int64 // body bytes still to come
	got     int64 // body bytes seen
	pieces  int   // DATA frames that ended inside this message
}

const (
	pieceSlack = 64
	minPiece   = 512
	maxPartial = 4 * DefaultMaxStreams
	// HTTP/2 (RFC 9113): frame types and flags read here.
	frameData      = 0x0
	frameRSTStream = 0x3
	flagEndStream  = 0x1
	flagPadded     = 0x8
)

func newPiecesConn(c net.Conn, log *slog.Logger) *piecesConn {
	return &piecesConn{Conn: c, log: log, peer: c.RemoteAddr().String(), preface: 24, msgs: map[uint32]*partialMsg{}}
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
				c.feed(b[:k])
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

// feed follows the gRPC messages of the current frame's stream through d.
func (c *piecesConn) feed(d []byte) {
	m := c.msgs[c.stream]
	for len(d) > 0 {
		if m == nil {
			m = &partialMsg{}
			c.msgs[c.stream] = m
		}
		if m.prefixN < len(m.prefix) {
			k := copy(m.prefix[m.prefixN:], d)
			m.prefixN += k
			d = d[k:]
			if m.prefixN < len(m.prefix) {
				continue
			}
			m.left = int64(binary.BigEndian.Uint32(m.prefix[1:]))
		}
		k := min(m.left, int64(len(d)))
		m.left -= k
		m.got += k
		d = d[k:]
		if m.left == 0 { // the message is done; the next starts afresh
			*m = partialMsg{}
		}
	}
}

// endFrame counts a DATA frame that ended inside a message.
func (c *piecesConn) endFrame() string {
	if c.ftype == frameRSTStream {
		delete(c.msgs, c.stream)
		return ""
	}
	if c.ftype != frameData {
		return ""
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
