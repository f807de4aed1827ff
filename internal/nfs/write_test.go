package nfs

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"math"
	"runtime"
	"sync/atomic"
	"syscall"
	"testing"

	nfsc "github.com/willscott/go-nfs-client/nfs"
	"github.com/willscott/go-nfs-client/nfs/rpc"

	"tessera/internal/meta"
	"tessera/internal/nfs/nfstest"
	"tessera/internal/vfs"
)

// TestUnstableWriteAndCommit: an UNSTABLE WRITE is answered UNSTABLE
// (buffered, read back at once) and COMMIT answers the same verifier, the
// server's; FILE_SYNC and DATA_SYNC are answered FILE_SYNC (committed
// before the reply).
func TestUnstableWriteAndCommit(t *testing.T) {
	cl := newCluster(t)
	srv := cl.serve(t, Config{Squash: SquashNone})
	root := mount(t, srv.addr, 0, 0)
	auth := rpc.NewAuthUnix("test", 0, 0).Auth()
	writeFile(t, root, "f", nil)
	_, fh, err := root.Lookup("f")
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("unstable!"), 50000) // 450000 bytes, in 3 writes
	for off := 0; off < len(data); off += 150000 {
		r, err := nfstest.Write(root, auth, fh, uint64(off), data[off:off+150000], nfstest.Unstable)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != nfsc.NFS3Ok || r.Count != 150000 || r.Committed != nfstest.Unstable || r.Verf != srv.s.verifier {
			t.Fatalf("UNSTABLE write at %d: %+v; want status 0, count 150000, committed UNSTABLE, verifier %x", off, r, srv.s.verifier)
		}
	}
	if got := readFile(t, root, "f"); !bytes.Equal(got, data) {
		t.Fatalf("read after UNSTABLE writes: %d bytes, want the %d written", len(got), len(data))
	}
	status, verf, err := nfstest.Commit(root, auth, fh)
	if err != nil || status != nfsc.NFS3Ok || verf != srv.s.verifier {
		t.Fatalf("commit: status %d, verifier %x, %v; want 0 and %x", status, verf, err, srv.s.verifier)
	}
	for _, how := range []uint32{nfstest.DataSync, nfstest.FileSync} {
		r, err := nfstest.Write(root, auth, fh, 0, []byte("sync"), how)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != nfsc.NFS3Ok || r.Count != 4 || r.Committed != nfstest.FileSync || r.Verf != srv.s.verifier {
			t.Fatalf("write with stability %d: %+v; want committed FILE_SYNC", how, r)
		}
	}
	if got := readFile(t, root, "f"); !bytes.Equal(got[:4], []byte("sync")) || len(got) != len(data) {
		t.Fatalf("read after the sync writes: %q... (%d bytes)", got[:4], len(got))
	}
	// Another start has another verifier (internal/up draws one per start).
	other := cl.serve(t, Config{Squash: SquashNone})
	r, err := nfstest.Write(mount(t, other.addr, 0, 0), auth, fh, 0, []byte("s"), nfstest.Unstable)
	if err != nil || r.Status != nfsc.NFS3Ok || r.Verf == srv.s.verifier {
		t.Fatalf("write on another server: %+v, %v; want OK with another verifier than %x", r, err, srv.s.verifier)
	}
}

// TestWriteRefusals: WRITE and COMMIT answer an NFS error, never a
// crash: a directory, a forged or short handle, a caller without write
// permission, a read-only server, an unknown stability.
func TestWriteRefusals(t *testing.T) {
	cl := newCluster(t)
	srv := cl.serve(t, Config{Squash: SquashNone})
	root := mount(t, srv.addr, 0, 0)
	auth := rpc.NewAuthUnix("test", 0, 0).Auth()
	writeFile(t, root, "mine", []byte("root's"))
	if _, err := root.Mkdir("d", 0o755); err != nil {
		t.Fatal(err)
	}
	_, file, err := root.Lookup("mine")
	if err != nil {
		t.Fatal(err)
	}
	_, dir, err := root.Lookup("d")
	if err != nil {
		t.Fatal(err)
	}
	forged := append([]byte(nil), file...)
	forged[0] ^= 0xff
	user := mount(t, srv.addr, 1000, 1000)
	for _, tc := range []struct {
		name   string
		target *nfsc.Target
		auth   rpc.Auth
		fh     []byte
		how    uint32
		want   uint32
	}{
		{"a directory", root, auth, dir, nfstest.Unstable, nfsc.NFS3ErrIsDir},
		{"a forged handle", root, auth, forged, nfstest.FileSync, nfsc.NFS3ErrStale},
		{"a short handle", root, auth, file[:8], nfstest.FileSync, nfsc.NFS3ErrBadHandle},
		{"uid 1000 on root's 0644 file", user, rpc.NewAuthUnix("test", 1000, 1000).Auth(), file, nfstest.Unstable, nfsc.NFS3ErrAcces},
		{"stability 7", root, auth, file, 7, nfsc.NFS3ErrInval},
	} {
		r, err := nfstest.Write(tc.target, tc.auth, tc.fh, 0, []byte("x"), tc.how)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if r.Status != tc.want {
			t.Errorf("write to %s: status %d, want %d", tc.name, r.Status, tc.want)
		}
	}
	if status, _, err := nfstest.Commit(root, auth, forged); err != nil || status != nfsc.NFS3ErrStale {
		t.Errorf("commit of a forged handle: status %d, %v; want NFS3ERR_STALE", status, err)
	}
	if got := readFile(t, root, "mine"); string(got) != "root's" {
		t.Fatalf("after the refused writes the file reads %q", got)
	}

	ro := cl.serve(t, Config{Squash: SquashNone, ReadOnly: true})
	rot := mount(t, ro.addr, 0, 0)
	r, err := nfstest.Write(rot, auth, file, 0, []byte("x"), nfstest.FileSync)
	if err != nil || r.Status != nfsc.NFS3ErrROFS {
		t.Errorf("write on a read-only server: %+v, %v; want NFS3ERR_ROFS", r, err)
	}
	if status, _, err := nfstest.Commit(rot, auth, file); err != nil || status != nfsc.NFS3ErrROFS {
		t.Errorf("commit on a read-only server: status %d, %v; want NFS3ERR_ROFS", status, err)
	}
}

// FuzzServeIO feeds READ, WRITE, COMMIT, CREATE, MKDIR and SETATTR arguments, bounded as the gate
// bounds them (checkArgs), to serveIO: every input gets a result that
// starts with a status, never a panic.
func FuzzServeIO(f *testing.F) {
	cl := newCluster(f)
	srv := cl.serve(f, Config{Squash: SquashNone})
	ctx := context.Background()
	in, err := srv.v.Create(ctx, vfs.Root, meta.CreateReq{Parent: meta.RootIno, Name: "f", Mode: syscall.S_IFREG | 0o644})
	if err != nil {
		f.Fatal(err)
	}
	fh := srv.s.handle(in.Ino, in.Gen)
	args := func(proc uint32, off uint64, how uint32, data []byte) []byte {
		b := appendOpaque(nil, fh)
		b = binary.BigEndian.AppendUint64(b, off)
		b = binary.BigEndian.AppendUint32(b, uint32(len(data)))
		if proc == procNFSWrite {
			b = binary.BigEndian.AppendUint32(b, how)
			b = appendOpaque(b, data)
		}
		return b
	}
	f.Add(uint8(procNFSWrite), args(procNFSWrite, 0, unstable, []byte("hello")))
	f.Add(uint8(procNFSWrite), args(procNFSWrite, 1<<40, fileSync, []byte("far")))
	f.Add(uint8(procNFSWrite), args(procNFSWrite, math.MaxUint64-1, dataSync, []byte("overflow")))
	f.Add(uint8(procNFSCommit), args(procNFSCommit, 0, 0, nil))
	f.Add(uint8(procNFSRead), args(procNFSRead, 0, 0, []byte("count")))
	root := rootHandle(srv)
	f.Add(uint8(3), createArgs(root, "c", createUnchecked, sattr{mode: u32p(0o644), size: u64p(3)}))
	f.Add(uint8(4), mkdirArgs(root, "m", 0o755))
	f.Add(uint8(5), setattrArgs(fh, sattr{mode: u32p(0o600), size: u64p(1)}, []uint32{1, 2}))
	g := newGate(ctx, nil, srv.s.squash, srv.s.inFlight)
	h := newConnHandler(srv.s, g, ctx)
	f.Fuzz(func(t *testing.T, proc uint8, b []byte) {
		c := call{prog: progNFS, vers: 3, proc: serveIOProcs[int(proc)%len(serveIOProcs)]}
		if err := checkArgs(&xr{b: b}, &c); err != nil {
			return // the gate closes the connection
		}
		res := h.serveIO(c, vfs.Root, b)
		defer res.release()
		least := 12 // status and an empty wcc_data at least
		if c.proc == procNFSRead {
			least = 8 // status and no attributes
		}
		if len(res.body) < least || len(res.data) > maxIO {
			t.Fatalf("a %d-byte result with %d bytes of data", len(res.body), len(res.data))
		}
	})
}

// serveIOProcs are the procedures FuzzServeIO sends, by the first byte.
var serveIOProcs = []uint32{procNFSWrite, procNFSCommit, procNFSRead, procNFSCreate, procNFSMkdir, procNFSSetAttr}

func appendOpaque(b, v []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(v)))
	b = append(b, v...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

// TestPipelinedWritesUploadEachBlockOnce: a file written as pieces of a
// quarter block, all sent on one connection without waiting (a kernel
// client's write-behind), is uploaded one block at a time, each once:
// the WRITEs of one file are applied in the order they came, so the piece
// that ends a block (which starts its upload) never overtakes the pieces
// before it.
func TestPipelinedWritesUploadEachBlockOnce(t *testing.T) {
	cl := newCluster(t) // 64 KiB blocks
	srv := cl.serve(t, Config{Squash: SquashNone})
	fh := mkFile(t, srv, "f")
	var n atomic.Int32
	srv.s.ioHook = func(proc uint32) {
		if proc == procNFSWrite && n.Add(1)%4 != 0 {
			for range 20 { // the pieces before a block's last one are slower
				runtime.Gosched()
			}
		}
	}
	const blocks, piece = 8, 16 << 10
	data := make([]byte, blocks*64<<10)
	rand.Read(data)
	rc := dialRaw(t, srv.addr)
	var out bytes.Buffer
	for off := 0; off < len(data); off += piece {
		rec, _ := rc.record(procNFSWrite, writeArgsOf(fh, uint64(off), data[off:off+piece], unstable))
		out.Write(rec)
	}
	commit, _ := rc.record(procNFSCommit, readArgsOf(fh, 0, 0))
	out.Write(commit)
	before := cl.st.Puts()
	if _, err := rc.c.Write(out.Bytes()); err != nil {
		t.Fatal(err)
	}
	res := rc.replies(len(data)/piece + 1)
	for xid, r := range res {
		if st := binary.BigEndian.Uint32(r); st != nfsOK {
			t.Fatalf("call %d: status %d", xid, st)
		}
	}
	if got := cl.st.Puts() - before; got != blocks {
		t.Errorf("%d blocks written as %d pipelined WRITEs: %d block uploads, want %d", blocks, len(data)/piece, got, blocks)
	}
	target := mount(t, srv.addr, 0, 0)
	if got := readFile(t, target, "f"); !bytes.Equal(got, data) {
		t.Fatalf("read back %d bytes, not what was written", len(got))
	}
}
