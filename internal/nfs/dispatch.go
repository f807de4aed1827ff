package nfs

import (
	"encoding/binary"
	"math"
	"net"
	"sync"

	"tessera/internal/meta"
)

// The gate serves READ, WRITE, COMMIT, GETATTR, LOOKUP, ACCESS, REMOVE,
// CREATE, MKDIR and SETATTR of one connection several at a time, on workers of the connection's (at
// most maxCallsPerConn, started as needed and kept while it is open: a
// fresh goroutine per call grew its stack through every call), so that a
// client with several calls in flight on a connection (a kernel client
// reading ahead or writing behind) is not served one call after another.
// Calls on the same file keep the order they came in where it matters: a
// call waits for the earlier calls in flight on the same inode whose byte
// ranges overlap its own, unless both only read, and a WRITE for every
// WRITE before it on the same inode (a COMMIT covers the whole file;
// GETATTR and ACCESS read the whole inode, LOOKUP its directory; CREATE
// and MKDIR change their directory, SETATTR its inode, each as a WRITE of
// the whole of it). A REMOVE, and an UNCHECKED CREATE with a size (it may
// truncate a file there), changes its directory and an inode its arguments do not name
// (the one removed): it waits for every call before it and every call
// after it waits for it, but for REMOVEs in other directories. Calls
// go-nfs serves (everything else) wait until every call of the gate's
// before them is done, and the next record is read only once go-nfs has
// answered: they are ordered against all. Replies go out as whole records
// in the order the calls finish, each carrying its call's xid.

// maxCallsPerConn bounds the gate's calls in flight on one connection
// (the server's budget bounds their bytes: Config.MaxInFlight).
const maxCallsPerConn = 16

// ioCalls are a gate's calls in flight and its workers. Guarded by
// gate.mu.
type ioCalls struct {
	running int
	pending []*ioCall
	// jobs are the calls handed to the workers (room for
	// maxCallsPerConn: sent under gate.mu, never blocks); closed with the
	// gate.
	jobs    chan func()
	workers int // started
	idle    int // waiting for a job and not claimed by one sent
	ended   bool
}

// ioCall is a call in flight: the bytes of an inode it reads or changes.
type ioCall struct {
	ino        meta.Ino // 0: no valid handle (orders against nothing)
	start, end uint64   // [start, end)
	write      bool
	// wide: the call changes an inode besides ino, not known before it
	// is served (REMOVE, a CREATE that may truncate: ino is the
	// directory).
	wide bool
	done chan struct{}
}

// conflicts reports whether b, which came after a, must wait for it.
func (a *ioCall) conflicts(b *ioCall) bool {
	if a.wide || b.wide {
		return !(a.wide && b.wide && a.ino != b.ino)
	}
	if a.ino == 0 || a.ino != b.ino {
		return false
	}
	// Writes of one file are applied in the order they came, whatever
	// their ranges: the client uploads a block once a write reaches its
	// end, so a write-behind's last piece of a block overtaking the ones
	// before it would send the block out unfinished, and the block be
	// written and uploaded again with the rest.
	return a.write && b.write || (a.write || b.write) && a.start < b.end && b.start < a.end
}

// gateServes reports whether the gate answers NFS call c (record rec)
// itself: READ, WRITE, COMMIT, GETATTR, ACCESS, REMOVE, CREATE, MKDIR,
// SETATTR, and LOOKUP of a
// name other than "." and "..".
func gateServes(c call, rec []byte) bool {
	switch c.proc {
	case procNFSRead, procNFSWrite, procNFSCommit, procNFSGetAttr, procNFSAccess, procNFSRemove,
		procNFSCreate, procNFSMkdir, procNFSSetAttr:
		return true
	case procNFSLookup:
		return !dotName(rec[4+c.argsAt:])
	}
	return false
}

// namespaceCall reports whether proc is one of the gate's calls that do
// no I/O of file data.
func namespaceCall(proc uint32) bool {
	switch proc {
	case procNFSGetAttr, procNFSLookup, procNFSAccess, procNFSRemove, procNFSCreate, procNFSMkdir, procNFSSetAttr:
		return true
	}
	return false
}

// ioCallOf says what call c (whose record is rec) touches.
func ioCallOf(rec []byte, c call) *ioCall {
	x := &ioCall{done: make(chan struct{})}
	fh, rest, ok := handleArg(rec[4+c.argsAt:])
	if !ok {
		return x
	}
	d, err := decodeHandle(fh)
	if err != nil {
		return x
	}
	x.ino = d.ino
	switch {
	case c.proc == procNFSRemove:
		x.start, x.end, x.write, x.wide = 0, math.MaxUint64, true, true
	case c.proc == procNFSCreate:
		// Its directory; an UNCHECKED create with a size may truncate a
		// file already there, which its arguments do not name.
		_, truncates := createHow(rec[4+c.argsAt:])
		x.start, x.end, x.write, x.wide = 0, math.MaxUint64, true, truncates
	case c.proc == procNFSMkdir || c.proc == procNFSSetAttr:
		x.start, x.end, x.write = 0, math.MaxUint64, true
	case c.proc == procNFSGetAttr || c.proc == procNFSAccess || c.proc == procNFSLookup:
		x.start, x.end = 0, math.MaxUint64
	case c.proc == procNFSCommit || len(rest) < 12:
		x.start, x.end, x.write = 0, math.MaxUint64, true
	default:
		x.start = binary.BigEndian.Uint64(rest)
		n := uint64(binary.BigEndian.Uint32(rest[8:])) // READ's count, WRITE's count
		x.end = x.start + max(n, 1)
		if x.end < x.start {
			x.end = math.MaxUint64
		}
		x.write = c.proc == procNFSWrite
	}
	return x
}

// dispatch starts serving call c (record rec, holding need of the budget)
// on a goroutine of its own, after the calls before it on the same bytes;
// it waits first while the connection has maxCallsPerConn calls running.
// A namespace call (namespaceCall) that comes alone (no call of the
// connection's running, none read behind it) is served at once by the
// reader instead: a client that waits for each reply (stat, rm) is not
// made to wait for a worker to be woken too, which on a busy machine
// costs more than the call.
func (g *gate) dispatch(rec []byte, c call, need int64) error {
	x := ioCallOf(rec, c)
	g.mu.Lock()
	for g.io.running >= maxCallsPerConn && !g.closed {
		g.cond.Wait()
	}
	if g.closed {
		g.mu.Unlock()
		g.inFlight.give(need)
		return net.ErrClosed
	}
	var after []chan struct{}
	for _, p := range g.io.pending {
		if p.conflicts(x) {
			after = append(after, p.done)
		}
	}
	inline := g.io.running == 0 && g.br.Buffered() == 0 && namespaceCall(c.proc)
	g.io.pending = append(g.io.pending, x)
	g.io.running++
	cred := g.squash(c.flavor, c.cred)
	job := func() {
		defer g.finished(x, need)
		for _, d := range after {
			select {
			case <-d:
			case <-g.dead:
				return
			}
		}
		r := g.serveIO(c, cred, rec[4+c.argsAt:])
		defer r.release()
		_ = g.writeReply(rec[4:8], r) // a failed write ends the connection: its reader sees it
		freeRecord(rec)               // nothing keeps it: vfs copies what it writes
	}
	if inline {
		g.mu.Unlock()
		job()
		return nil
	}
	start := false
	if g.io.idle > 0 {
		g.io.idle--
	} else {
		g.io.workers++
		start = true
	}
	g.io.jobs <- job
	g.mu.Unlock()
	if start {
		go g.worker()
	}
	return nil
}

// worker runs the gate's calls until the gate closes. The jobs channel is
// in the order the calls came: a call's earlier calls on the same bytes
// were taken by a worker before it, so waiting for them cannot deadlock.
func (g *gate) worker() {
	for job := range g.io.jobs {
		job()
		g.mu.Lock()
		g.io.idle++
		g.mu.Unlock()
	}
}

// endJobsLocked closes the workers' channel (the gate closed: no call is
// dispatched any more).
func (g *gate) endJobsLocked() {
	if !g.io.ended {
		g.io.ended = true
		close(g.io.jobs)
	}
}

// finished ends call x: the calls after it may go on.
func (g *gate) finished(x *ioCall, need int64) {
	g.inFlight.give(need)
	g.mu.Lock()
	defer g.mu.Unlock()
	for i, p := range g.io.pending {
		if p == x {
			g.io.pending = append(g.io.pending[:i], g.io.pending[i+1:]...)
			break
		}
	}
	g.io.running--
	close(x.done)
	g.cond.Broadcast()
}

// waitCalls waits until the gate's calls are done (the gate is closed:
// they end soon).
func (g *gate) waitCalls() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for g.io.running > 0 {
		g.cond.Wait()
	}
}

// Records of more than minPooled bytes (WRITEs) come from two pools, of
// records up to pooledRecord bytes (an untar's small files: their WRITEs
// were a fresh buffer each, 7 % of the server's allocation, nfs-6) and of
// larger ones, and go back to theirs once the gate's call is answered;
// go-nfs's, and the small ones, are left to the garbage collector.
const (
	minPooled    = 4 << 10
	pooledRecord = 64 << 10
)

var (
	records      = sync.Pool{New: func() any { b := make([]byte, 4+maxRecordSize); return &b }}
	smallRecords = sync.Pool{New: func() any { b := make([]byte, 4+pooledRecord); return &b }}
)

// newRecord returns a buffer for a record of n bytes and its mark.
func newRecord(n int) []byte {
	switch {
	case n <= minPooled || n > maxRecordSize:
		return make([]byte, 4+n)
	case n <= pooledRecord:
		return (*smallRecords.Get().(*[]byte))[:4+n]
	}
	return (*records.Get().(*[]byte))[:4+n]
}

// freeRecord gives rec back to the pool it came from, if it did.
func freeRecord(rec []byte) {
	switch {
	case len(rec) <= 4+minPooled:
	case cap(rec) == 4+maxRecordSize:
		rec = rec[:cap(rec)]
		records.Put(&rec)
	case cap(rec) == 4+pooledRecord:
		rec = rec[:cap(rec)]
		smallRecords.Put(&rec)
	}
}
