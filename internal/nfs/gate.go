package nfs

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"sync"

	"tessera/internal/vfs"
)

// gate sits between a client's connection and go-nfs, which serves one
// call of a connection at a time: it hands go-nfs one whole RPC record,
// read and checked here (parseCall), and the next only once the reply to
// it has been written. So the credentials of the call being served are
// known (go-nfs does not pass them to its Handler) and a record is bounded
// (maxRecordSize) before anything is allocated for it. READ, WRITE and
// COMMIT are answered by the gate itself, several at once (dispatch.go);
// a call for go-nfs waits until they are done.
type gate struct {
	net.Conn
	// br reads the connection's records: it tells whether the client has
	// sent more calls than the one being read (dispatch serves a call
	// inline when not).
	br     *bufio.Reader
	squash func(flavor uint32, c vfs.Cred) vfs.Cred
	// exportPath is what MOUNT EXPORT lists.
	exportPath string
	// serveIO answers NFS READ, WRITE and COMMIT (connHandler.serveIO):
	// given the call, its caller and its arguments, it returns the result.
	serveIO func(c call, cred vfs.Cred, args []byte) reply
	// inFlight is the server's budget of bytes in flight; held is what
	// this connection holds of it for the call go-nfs serves (the gate's
	// own calls hold theirs until their replies are written).
	inFlight *budget
	ctx      context.Context
	held     int64
	// wsem is held while one reply record is written: go-nfs's (which
	// may come in several writes) or one of the gate's.
	wsem chan struct{}
	io   ioCalls // the gate's own calls in flight (dispatch.go)

	mu     sync.Mutex
	cond   *sync.Cond
	owed   bool // a record was handed over and its reply not written yet
	closed bool
	cur    call          // the call being served
	seq    uint64        // counts the calls handed over
	rec    []byte        // what is left of the record being handed over
	err    error         // why reading stopped
	dead   chan struct{} // closed when reading stopped or the gate closed
	die    sync.Once

	// out follows the replies written: bytes left of the current
	// record fragment, and whether it is the last one.
	outLeft uint32
	outLast bool
	outHdr  []byte // a record mark split across writes
}

// readBuf is the size of a connection's read buffer: many small calls
// (a pipelining client's) in one read; a WRITE's data bigger than it is
// read straight into its record.
const readBuf = 64 << 10

func newGate(ctx context.Context, c net.Conn, squash func(uint32, vfs.Cred) vfs.Cred, inFlight *budget) *gate {
	g := &gate{Conn: c, br: bufio.NewReaderSize(c, readBuf), squash: squash, dead: make(chan struct{}), inFlight: inFlight, ctx: ctx, wsem: make(chan struct{}, 1)}
	g.io.jobs = make(chan func(), maxCallsPerConn)
	g.cond = sync.NewCond(&g.mu)
	return g
}

// cred is the squashed caller of the call being served.
func (g *gate) cred() vfs.Cred {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.squash(g.cur.flavor, g.cur.cred)
}

// readErr is why reading stopped (nil if it did not).
func (g *gate) readErr() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.err
}

// serving is the sequence number of the call being served.
func (g *gate) serving() uint64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.seq
}

func (g *gate) Read(p []byte) (int, error) {
	g.mu.Lock()
	for len(g.rec) == 0 && g.owed && !g.closed {
		g.cond.Wait()
	}
	if g.closed {
		g.mu.Unlock()
		return 0, net.ErrClosed
	}
	if g.err != nil {
		err := g.err
		g.mu.Unlock()
		return 0, err
	}
	for len(g.rec) == 0 {
		g.mu.Unlock()
		rec, c, need, err := g.readRecord()
		if err == nil {
			var answered bool
			if answered, err = g.answer(rec, c, need); answered && err == nil {
				g.mu.Lock()
				continue
			}
		}
		g.mu.Lock()
		if err != nil {
			g.inFlight.give(need)
			// The gate's calls read before the end are answered first (a
			// client may send its last calls and close its side).
			for g.io.running > 0 && !g.closed {
				g.cond.Wait()
			}
			g.err = err
			g.mu.Unlock()
			g.die.Do(func() { close(g.dead) })
			return 0, err
		}
		// go-nfs serves this one: after the gate's own calls before it.
		for g.io.running > 0 && !g.closed {
			g.cond.Wait()
		}
		if g.closed {
			g.inFlight.give(need)
			g.mu.Unlock()
			return 0, net.ErrClosed
		}
		g.held += need
		g.rec, g.cur, g.owed = rec, c, true
		g.seq++
	}
	n := copy(p, g.rec)
	g.rec = g.rec[n:]
	g.mu.Unlock()
	return n, nil
}

// readRecord reads one record (a single fragment, as go-nfs takes them),
// checks its call, clamps a READ's count to maxIO and returns the record
// with its mark, and what it took of the server's budget (also with an
// error: the caller gives it back).
func (g *gate) readRecord() ([]byte, call, int64, error) {
	var mark [4]byte
	if _, err := io.ReadFull(g.br, mark[:]); err != nil {
		return nil, call{}, 0, err
	}
	m := binary.BigEndian.Uint32(mark[:])
	n := m &^ (1 << 31)
	switch {
	case m&(1<<31) == 0:
		return nil, call{}, 0, fmt.Errorf("nfs: a record in several fragments is not served")
	case n > maxRecordSize:
		return nil, call{}, 0, fmt.Errorf("nfs: a record of %d bytes (at most %d)", n, maxRecordSize)
	}
	// The record, and the reply of a READ (at most maxIO), are taken
	// from the server's budget before anything is allocated; given back
	// when the reply is written.
	need := int64(n) + maxIO
	if err := g.inFlight.take(g.ctx, need); err != nil {
		return nil, call{}, 0, err
	}
	rec := newRecord(int(n))
	copy(rec, mark[:])
	if _, err := io.ReadFull(g.br, rec[4:]); err != nil {
		return nil, call{}, need, err
	}
	c, err := parseCall(rec[4:])
	if err != nil {
		return nil, call{}, need, fmt.Errorf("nfs: bad call: %w", err)
	}
	if c.pathAt > 0 && binary.BigEndian.Uint32(rec[4+c.pathAt:]) == 0 {
		// An empty MOUNT path (libnfs sends one for nfs://HOST/FILE)
		// is the root: go-nfs fails to read an empty string at the end
		// of a record.
		rec = append(rec[:4+c.pathAt], 0, 0, 0, 1, '/', 0, 0, 0)
		binary.BigEndian.PutUint32(rec, uint32(len(rec)-4)|1<<31)
	}
	if c.countAt > 0 {
		at := 4 + c.countAt
		if binary.BigEndian.Uint32(rec[at:]) > maxIO {
			binary.BigEndian.PutUint32(rec[at:], maxIO)
		}
	}
	return rec, c, need, nil
}

// Write passes replies on, following their record marks: once the last
// fragment of a reply is written, the next call may be read. An FSINFO
// reply is rewritten to offer reads and writes of at most maxIO.
func (g *gate) Write(p []byte) (int, error) {
	g.mu.Lock()
	start := g.outLeft == 0 && len(g.outHdr) == 0
	if start && g.cur.prog == progNFS && g.cur.proc == procNFSFSInfo {
		p = capFSInfo(p)
	}
	g.mu.Unlock()
	if start {
		// A reply starts: no reply of the gate's may come between its
		// writes (released when its last byte is written: replied).
		if err := g.lockWrites(); err != nil {
			return 0, err
		}
	}
	p = fixAcceptStat(p)
	n, err := g.Conn.Write(p)
	g.track(p[:n])
	return n, err
}

// fixAcceptStat corrects go-nfs's accept_stat codes in p, a whole reply
// with its record mark: go-nfs numbers PROC_UNAVAIL 2, GARBAGE_ARGS 3 and
// SYSTEM_ERR 4, one less than RFC 5531 (2 is PROG_MISMATCH, which must
// carry a version range: libnfs fails to decode the reply). go-nfs sends
// no PROG_MISMATCH of its own.
func fixAcceptStat(p []byte) []byte {
	// mark, xid, REPLY, MSG_ACCEPTED, verifier (flavor, length), stat
	const at = 4 + 4 + 4 + 4 + 8
	if len(p) < at+4 || int(binary.BigEndian.Uint32(p)&^(1<<31)) != len(p)-4 ||
		binary.BigEndian.Uint32(p[8:]) != 1 || binary.BigEndian.Uint32(p[12:]) != 0 || binary.BigEndian.Uint32(p[20:]) != 0 {
		return p
	}
	if st := binary.BigEndian.Uint32(p[at:]); st >= 2 && st <= 4 {
		q := append([]byte(nil), p...)
		binary.BigEndian.PutUint32(q[at:], st+1)
		return q
	}
	return p
}

// answer serves the MOUNT procedures go-nfs does not (EXPORT, DUMP,
// UMNTALL) and NFS READ, WRITE and COMMIT (dispatch.go) itself, and
// reports that it did: the reply is written, or will be by the call's
// own goroutine, which gives need back to the budget then.
func (g *gate) answer(rec []byte, c call, need int64) (bool, error) {
	var body []byte
	switch {
	case c.prog == progNFS && c.vers == 3 && gateServes(c, rec) && g.serveIO != nil:
		return true, g.dispatch(rec, c, need)
	case c.prog != progMount || c.vers != 3:
		return false, nil
	case c.proc == mountExport: // one export, open to every host (exportnode list)
		body = binary.BigEndian.AppendUint32(body, 1)
		body = appendString(body, g.exportPath)
		body = binary.BigEndian.AppendUint32(body, 0) // no groups
		body = binary.BigEndian.AppendUint32(body, 0) // no next
	case c.proc == mountDump:
		body = binary.BigEndian.AppendUint32(body, 0) // no mounts listed
	case c.proc == mountUmntAll:
	default:
		return false, nil
	}
	defer g.inFlight.give(need)
	return true, g.writeReply(rec[4:8], reply{body: body})
}

// writeReply writes the accepted reply to call xid: the RPC header, r's
// body, then r's data padded to 4 bytes, as one record in one write.
func (g *gate) writeReply(xid []byte, r reply) error {
	h := make([]byte, 4, 28+len(r.body))
	h = append(h, xid...)
	for _, v := range []uint32{1, 0, 0, 0, 0} { // REPLY, ACCEPTED, AUTH_NONE verifier, SUCCESS
		h = binary.BigEndian.AppendUint32(h, v)
	}
	h = append(h, r.body...)
	pad := (4 - len(r.data)%4) % 4
	binary.BigEndian.PutUint32(h, uint32(len(h)-4+len(r.data)+pad)|1<<31)
	bufs := net.Buffers{h}
	if len(r.data) > 0 {
		bufs = append(bufs, r.data, make([]byte, pad))
	}
	if err := g.lockWrites(); err != nil {
		return err
	}
	defer g.unlockWrites()
	_, err := bufs.WriteTo(g.Conn)
	return err
}

// lockWrites waits until no other reply is being written; an error if
// the gate closed meanwhile.
func (g *gate) lockWrites() error {
	select {
	case g.wsem <- struct{}{}:
		return nil
	case <-g.dead:
		return net.ErrClosed
	}
}

func (g *gate) unlockWrites() { <-g.wsem }

func appendString(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(s)))
	b = append(b, s...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

// track follows the record marks of the bytes written.
func (g *gate) track(b []byte) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for len(b) > 0 {
		if g.outLeft == 0 {
			need := 4 - len(g.outHdr)
			k := min(need, len(b))
			g.outHdr = append(g.outHdr, b[:k]...)
			b = b[k:]
			if len(g.outHdr) < 4 {
				return
			}
			m := binary.BigEndian.Uint32(g.outHdr)
			g.outHdr = g.outHdr[:0]
			g.outLeft, g.outLast = m&^(1<<31), m&(1<<31) != 0
			if g.outLeft == 0 && g.outLast {
				g.replied()
			}
			continue
		}
		k := min(uint32(len(b)), g.outLeft)
		g.outLeft -= k
		b = b[k:]
		if g.outLeft == 0 && g.outLast {
			g.replied()
		}
	}
}

func (g *gate) replied() {
	g.owed = false
	g.cond.Broadcast()
	g.releaseLocked()
	g.unlockWrites()
}

// releaseLocked gives back what the connection holds of the budget.
func (g *gate) releaseLocked() {
	if g.held > 0 {
		g.inFlight.give(g.held)
		g.held = 0
	}
}

func (g *gate) Close() error {
	g.mu.Lock()
	g.closed = true
	g.endJobsLocked()
	g.releaseLocked()
	g.cond.Broadcast()
	g.mu.Unlock()
	g.die.Do(func() { close(g.dead) })
	return g.Conn.Close()
}

// capFSInfo returns p, a whole FSINFO reply with its record mark, with
// rtmax, rtpref, wtmax and wtpref at most maxIO (go-nfs offers 1 GiB,
// more than a record may hold here). Anything else is returned as it is.
func capFSInfo(p []byte) []byte {
	// mark, xid, reply, accepted, verifier (flavor, length), accept
	// status, NFS status, post_op_attr's bool.
	const attrsAt = 4 + 4 + 4 + 4 + 8 + 4 + 4
	if len(p) < attrsAt+4 || binary.BigEndian.Uint32(p[4+8:]) != 0 || binary.BigEndian.Uint32(p[4+20:]) != 0 || binary.BigEndian.Uint32(p[attrsAt-4:]) != 0 {
		return p
	}
	at := attrsAt + 4
	if binary.BigEndian.Uint32(p[attrsAt:]) != 0 {
		at += 84 // fattr3
	}
	if len(p) < at+24 || int(binary.BigEndian.Uint32(p)&^(1<<31)) != len(p)-4 {
		return p
	}
	q := append([]byte(nil), p...)
	for _, off := range []int{0, 4, 12, 16} { // rtmax, rtpref, wtmax, wtpref
		if binary.BigEndian.Uint32(q[at+off:]) > maxIO {
			binary.BigEndian.PutUint32(q[at+off:], maxIO)
		}
	}
	return q
}
