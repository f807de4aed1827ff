package nfs

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"tessera/internal/meta"
	"tessera/internal/vfs"
)

// rawConn sends NFS calls on one connection without waiting for replies,
// and reads the replies by xid.
type rawConn struct {
	t   *testing.T
	c   net.Conn
	r   *bufio.Reader
	xid uint32
}

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	// A guard against a hang, not a time budget: the test fails, not waits forever.
	c.SetDeadline(time.Now().Add(2 * time.Minute))
	return &rawConn{t: t, c: c, r: bufio.NewReader(c)}
}

// record is an NFSv3 call of proc as root (AUTH_SYS) with args.
func (rc *rawConn) record(proc uint32, args []byte) ([]byte, uint32) {
	return rc.recordAs(0, 0, proc, args)
}

// recordAs is record as uid:gid.
func (rc *rawConn) recordAs(uid, gid, proc uint32, args []byte) ([]byte, uint32) {
	rc.xid++
	b := make([]byte, 4)
	for _, v := range []uint32{rc.xid, 0, 2, progNFS, 3, proc, authSys} {
		b = binary.BigEndian.AppendUint32(b, v)
	}
	var cred []byte
	cred = binary.BigEndian.AppendUint32(cred, 0) // stamp
	cred = appendOpaque(cred, []byte("test"))
	cred = binary.BigEndian.AppendUint32(cred, uid)
	cred = binary.BigEndian.AppendUint32(cred, gid)
	cred = binary.BigEndian.AppendUint32(cred, 0) // no groups
	b = appendOpaque(b, cred)
	b = binary.BigEndian.AppendUint32(b, 0) // AUTH_NONE verifier
	b = binary.BigEndian.AppendUint32(b, 0)
	b = append(b, args...)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4)|1<<31)
	return b, rc.xid
}

// replies reads n replies and returns their results (after the accepted
// SUCCESS) by xid.
func (rc *rawConn) replies(n int) map[uint32][]byte {
	rc.t.Helper()
	out := make(map[uint32][]byte)
	for range n {
		var m [4]byte
		if _, err := io.ReadFull(rc.r, m[:]); err != nil {
			rc.t.Fatalf("reading reply %d of %d: %v", len(out)+1, n, err)
		}
		rec := make([]byte, binary.BigEndian.Uint32(m[:])&^(1<<31))
		if _, err := io.ReadFull(rc.r, rec); err != nil {
			rc.t.Fatal(err)
		}
		if len(rec) < 24 || binary.BigEndian.Uint32(rec[20:]) != 0 {
			rc.t.Fatalf("reply %x: not an accepted SUCCESS", rec[:min(len(rec), 24)])
		}
		out[binary.BigEndian.Uint32(rec)] = rec[24:]
	}
	return out
}

func writeArgsOf(fh []byte, off uint64, data []byte, how uint32) []byte {
	b := appendOpaque(nil, fh)
	b = binary.BigEndian.AppendUint64(b, off)
	b = binary.BigEndian.AppendUint32(b, uint32(len(data)))
	b = binary.BigEndian.AppendUint32(b, how)
	return appendOpaque(b, data)
}

func readArgsOf(fh []byte, off uint64, count uint32) []byte {
	b := appendOpaque(nil, fh)
	b = binary.BigEndian.AppendUint64(b, off)
	return binary.BigEndian.AppendUint32(b, count)
}

// readData returns a READ result's status and data.
func readData(t *testing.T, res []byte) (uint32, []byte) {
	t.Helper()
	st := binary.BigEndian.Uint32(res)
	if st != nfsOK {
		return st, nil
	}
	at := 8
	if binary.BigEndian.Uint32(res[4:]) != 0 {
		at += 84 // fattr3
	}
	n := binary.BigEndian.Uint32(res[at:])
	data := res[at+12:]
	if uint32(len(data)) < n {
		t.Fatalf("READ result of %d data bytes says %d", len(data), n)
	}
	return st, data[:n]
}

func mkFile(t *testing.T, srv *server, name string) []byte {
	t.Helper()
	in, err := srv.v.Create(context.Background(), vfs.Root, meta.CreateReq{Parent: meta.RootIno, Name: name, Mode: syscall.S_IFREG | 0o644})
	if err != nil {
		t.Fatal(err)
	}
	return srv.s.handle(in.Ino, in.Gen)
}

// TestPipelinedCallsKeepFileOrder: calls sent on one connection without
// waiting for replies are served several at once, but a READ sees every
// WRITE to its bytes sent before it and none sent after, and a COMMIT
// and a GETATTR (a read of the whole inode) come after all of them.
func TestPipelinedCallsKeepFileOrder(t *testing.T) {
	cl := newCluster(t)
	srv := cl.serve(t, Config{Squash: SquashNone})
	a, b := mkFile(t, srv, "a"), mkFile(t, srv, "b")
	rc := dialRaw(t, srv.addr)
	const rounds = 40
	piece := func(f string, i int) []byte { return bytes.Repeat([]byte(fmt.Sprintf("%s%04d", f, i)), 800) } // 4000 bytes
	var out bytes.Buffer
	reads := make(map[uint32][]byte) // xid: what the READ must return
	for i := range rounds {
		for _, f := range []struct {
			name string
			fh   []byte
		}{{"a", a}, {"b", b}} {
			rec, _ := rc.record(procNFSWrite, writeArgsOf(f.fh, 0, piece(f.name, i), unstable))
			out.Write(rec)
			rec, xid := rc.record(procNFSRead, readArgsOf(f.fh, 0, 4000))
			out.Write(rec)
			reads[xid] = piece(f.name, i)
		}
	}
	commit, commitXid := rc.record(procNFSCommit, readArgsOf(a, 0, 0))
	out.Write(commit)
	getattr, getattrXid := rc.record(1, appendOpaque(nil, a))
	out.Write(getattr)
	if _, err := rc.c.Write(out.Bytes()); err != nil {
		t.Fatal(err)
	}
	res := rc.replies(4*rounds + 2)
	for xid, want := range reads {
		st, got := readData(t, res[xid])
		if st != nfsOK || !bytes.Equal(got, want) {
			t.Fatalf("READ %d: status %d, %.10q...; want the WRITE sent just before it, %.10q...", xid, st, got, want)
		}
	}
	if st := binary.BigEndian.Uint32(res[commitXid]); st != nfsOK {
		t.Fatalf("COMMIT: status %d", st)
	}
	if st := binary.BigEndian.Uint32(res[getattrXid]); st != nfsOK || binary.BigEndian.Uint64(res[getattrXid][4+20:]) != 4000 {
		t.Fatalf("GETATTR after the pipelined writes: status %d, %x", st, res[getattrXid])
	}
	in, err := cl.svc.GetAttr(context.Background(), srv.s.exportIno)
	if err != nil || !in.IsDir() {
		t.Fatal(err)
	}
}

// TestSlowCallDoesNotHoldTheConnection: a READ that has not finished
// does not keep the READ sent after it on the same connection from being
// served (go-nfs alone serves one call of a connection at a time).
func TestSlowCallDoesNotHoldTheConnection(t *testing.T) {
	cl := newCluster(t)
	srv := cl.serve(t, Config{Squash: SquashNone})
	a, b := mkFile(t, srv, "a"), mkFile(t, srv, "b")
	second := make(chan struct{})
	var seen atomic.Int32
	srv.s.ioHook = func(proc uint32) {
		if proc != procNFSRead {
			return
		}
		if seen.Add(1) == 1 {
			select { // the first READ waits until the second one is served
			case <-second:
			case <-t.Context().Done(): // the test failed: let the server stop
			}
		} else {
			close(second)
		}
	}
	rc := dialRaw(t, srv.addr)
	rc.c.SetDeadline(time.Now().Add(time.Minute)) // a hang guard: served one at a time, the second READ never comes
	r1, x1 := rc.record(procNFSRead, readArgsOf(a, 0, 10))
	r2, x2 := rc.record(procNFSRead, readArgsOf(b, 0, 10))
	if _, err := rc.c.Write(append(r1, r2...)); err != nil {
		t.Fatal(err)
	}
	res := rc.replies(2)
	for _, x := range []uint32{x1, x2} {
		if st, _ := readData(t, res[x]); st != nfsOK {
			t.Fatalf("READ %d: status %d", x, st)
		}
	}
}

// TestStaleAfterRemoveThroughTheSharedHandle: a file written over NFS is
// held open by vfs's shared handle of its inode; once removed, READ,
// WRITE, COMMIT and GETATTR by its handle answer NFS3ERR_STALE, and the
// shared handle is released when idle.
func TestStaleAfterRemoveThroughTheSharedHandle(t *testing.T) {
	cl := newCluster(t)
	srv := cl.serve(t, Config{Squash: SquashNone})
	target := mount(t, srv.addr, 0, 0)
	fh := mkFile(t, srv, "gone")
	rc := dialRaw(t, srv.addr)
	w, _ := rc.record(procNFSWrite, writeArgsOf(fh, 0, []byte("data"), unstable))
	if _, err := rc.c.Write(w); err != nil {
		t.Fatal(err)
	}
	rc.replies(1)
	if srv.v.Open() != 1 {
		t.Fatalf("%d shared handles open after a WRITE, want 1", srv.v.Open())
	}
	if err := target.Remove("gone"); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	var xids []uint32
	for _, c := range []struct {
		proc uint32
		args []byte
	}{
		{procNFSRead, readArgsOf(fh, 0, 4)},
		{procNFSWrite, writeArgsOf(fh, 0, []byte("more"), unstable)},
		{procNFSCommit, readArgsOf(fh, 0, 0)},
		{1, appendOpaque(nil, fh)}, // GETATTR
	} {
		rec, xid := rc.record(c.proc, c.args)
		out.Write(rec)
		xids = append(xids, xid)
	}
	if _, err := rc.c.Write(out.Bytes()); err != nil {
		t.Fatal(err)
	}
	res := rc.replies(len(xids))
	for i, x := range xids {
		if st := binary.BigEndian.Uint32(res[x]); st != nfsErrStale {
			t.Errorf("call %d by the removed file's handle: status %d, want NFS3ERR_STALE (%d)", i, st, nfsErrStale)
		}
	}
}

// TestCallsBeforeTheEndAreAnswered: calls sent just before the client
// closes its side of the connection are answered before it is closed.
func TestCallsBeforeTheEndAreAnswered(t *testing.T) {
	cl := newCluster(t)
	srv := cl.serve(t, Config{Squash: SquashNone})
	a := mkFile(t, srv, "a")
	rc := dialRaw(t, srv.addr)
	var out bytes.Buffer
	for range 4 {
		rec, _ := rc.record(procNFSWrite, writeArgsOf(a, 0, []byte("data"), unstable))
		out.Write(rec)
		rec, _ = rc.record(procNFSRead, readArgsOf(a, 0, 4))
		out.Write(rec)
	}
	if _, err := rc.c.Write(out.Bytes()); err != nil {
		t.Fatal(err)
	}
	if err := rc.c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	for x, res := range rc.replies(8) {
		if st := binary.BigEndian.Uint32(res); st != nfsOK {
			t.Fatalf("call %d: status %d", x, st)
		}
	}
}
