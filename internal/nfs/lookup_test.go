package nfs

import (
	"bytes"
	"context"
	"encoding/binary"
	"runtime"
	"syscall"
	"testing"
	"time"

	"tessera/internal/clock"
	"tessera/internal/meta"
	"tessera/internal/vfs"
)

// one sends one call as uid:gid and returns its result.
func (rc *rawConn) one(uid, gid, proc uint32, args []byte) []byte {
	rc.t.Helper()
	rec, xid := rc.recordAs(uid, gid, proc, args)
	if _, err := rc.c.Write(rec); err != nil {
		rc.t.Fatal(err)
	}
	return rc.replies(1)[xid]
}

func dirOpArgs(fh []byte, name string) []byte {
	return appendOpaque(appendOpaque(nil, fh), []byte(name))
}

// lookupResult returns a LOOKUP result's status and handle.
func lookupResult(t *testing.T, res []byte) (uint32, []byte) {
	t.Helper()
	st := binary.BigEndian.Uint32(res)
	if st != nfsOK {
		return st, nil
	}
	n := binary.BigEndian.Uint32(res[4:])
	return st, res[8 : 8+n]
}

func st(res []byte) uint32 { return binary.BigEndian.Uint32(res) }

func rootHandle(srv *server) []byte { return srv.s.handle(srv.s.exportIno, 0) }

func mkIn(t *testing.T, srv *server, parent meta.Ino, name string, mode uint32) meta.Inode {
	t.Helper()
	in, err := srv.v.Create(context.Background(), vfs.Root, meta.CreateReq{Parent: parent, Name: name, Mode: mode, Excl: true})
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// TestGateLookupAndGetattrAfterDelete: LOOKUP and GETATTR, answered by the
// gate from vfs's attribute cache, see a removal through the same server
// at once (NFS3ERR_NOENT for the name, NFS3ERR_STALE for the handle, of a
// file and of a directory), and one through another server at once for a
// file not open here, once the attributes' TTL has passed for one this
// server holds open (at once under posix, whose TTL is 0).
func TestGateLookupAndGetattrAfterDelete(t *testing.T) {
	cl := newCluster(t)
	fake := clock.NewFake(time.Unix(1_000_000, 0))
	a := cl.serveWith(t, Config{Squash: SquashNone}, "", fake)
	b := cl.serve(t, Config{Squash: SquashNone})
	strict := cl.serveWith(t, Config{Squash: SquashNone}, "posix", fake)
	d := mkIn(t, a, meta.RootIno, "d", syscall.S_IFDIR|0o755)
	for _, n := range []string{"f", "g"} {
		mkIn(t, a, d.Ino, n, syscall.S_IFREG|0o644)
	}
	rc, rcb, rcs := dialRaw(t, a.addr), dialRaw(t, b.addr), dialRaw(t, strict.addr)
	s, dfh := lookupResult(t, rc.one(0, 0, procNFSLookup, dirOpArgs(rootHandle(a), "d")))
	if s != nfsOK {
		t.Fatalf("LOOKUP d: status %d", s)
	}
	fhOf := func(rc *rawConn, name string) []byte {
		s, fh := lookupResult(t, rc.one(0, 0, procNFSLookup, dirOpArgs(dfh, name)))
		if s != nfsOK {
			t.Fatalf("LOOKUP d/%s: status %d", name, s)
		}
		return fh
	}
	f, g := fhOf(rc, "f"), fhOf(rc, "g")
	fhOf(rcs, "g")
	mkIn(t, a, d.Ino, "h", syscall.S_IFREG|0o644)
	h := fhOf(rc, "h")
	// g open in a's shared handles (a WRITE), h not.
	if s := st(rc.one(0, 0, procNFSWrite, writeArgsOf(g, 0, []byte("g"), unstable))); s != nfsOK {
		t.Fatalf("WRITE d/g: status %d", s)
	}
	for _, fh := range [][]byte{f, g, h, dfh} {
		if s := st(rc.one(0, 0, procNFSGetAttr, appendOpaque(nil, fh))); s != nfsOK {
			t.Fatalf("GETATTR: status %d", s)
		}
	}

	// Removed through this server: at once; the directory's GETATTR
	// shows the removal's times (the cache keeps only its identity).
	mtime := func() []byte {
		res := rc.one(0, 0, procNFSGetAttr, appendOpaque(nil, dfh))
		if st(res) != nfsOK {
			t.Fatalf("GETATTR d: status %d", st(res))
		}
		return append([]byte(nil), res[4+68:4+76]...)
	}
	before := mtime()
	if s := st(rc.one(0, 0, procNFSRemove, dirOpArgs(dfh, "f"))); s != nfsOK {
		t.Fatalf("REMOVE d/f: status %d", s)
	}
	if after := mtime(); bytes.Equal(after, before) {
		t.Errorf("GETATTR of d after the REMOVE in it: mtime %x as before", after)
	}
	if s := st(rc.one(0, 0, procNFSGetAttr, appendOpaque(nil, f))); s != nfsErrStale {
		t.Errorf("GETATTR of d/f removed through this server: status %d, want NFS3ERR_STALE", s)
	}
	if s, _ := lookupResult(t, rc.one(0, 0, procNFSLookup, dirOpArgs(dfh, "f"))); s != nfsErrNoEnt {
		t.Errorf("LOOKUP of d/f removed through this server: status %d, want NFS3ERR_NOENT", s)
	}

	// Removed through another server: a file not open here at once; one
	// open once the TTL has passed (or its callback came: these servers'
	// clients keep no session); under posix at once.
	for _, n := range []string{"g", "h"} {
		if s := st(rcb.one(0, 0, procNFSRemove, dirOpArgs(dfh, n))); s != nfsOK {
			t.Fatalf("REMOVE d/%s on the other server: status %d", n, s)
		}
	}
	if s := st(rc.one(0, 0, procNFSGetAttr, appendOpaque(nil, h))); s != nfsErrStale {
		t.Errorf("GETATTR of d/h, not open here, removed elsewhere: status %d, want NFS3ERR_STALE", s)
	}
	if s := st(rcs.one(0, 0, procNFSGetAttr, appendOpaque(nil, g))); s != nfsErrStale {
		t.Errorf("GETATTR under posix of d/g removed elsewhere: status %d, want NFS3ERR_STALE", s)
	}
	fake.Advance(time.Second)
	if s := st(rc.one(0, 0, procNFSGetAttr, appendOpaque(nil, g))); s != nfsErrStale {
		t.Errorf("GETATTR past the TTL of d/g removed elsewhere: status %d, want NFS3ERR_STALE", s)
	}

	// The directory, removed through this server's vfs (go-nfs's RMDIR
	// calls Rmdir).
	if err := a.v.Rmdir(context.Background(), vfs.Root, meta.RootIno, "d"); err != nil {
		t.Fatal(err)
	}
	if s := st(rc.one(0, 0, procNFSGetAttr, appendOpaque(nil, dfh))); s != nfsErrStale {
		t.Errorf("GETATTR of the directory removed: status %d, want NFS3ERR_STALE", s)
	}
	if s, _ := lookupResult(t, rc.one(0, 0, procNFSLookup, dirOpArgs(dfh, "x"))); s != nfsErrStale {
		t.Errorf("LOOKUP in the directory removed: status %d, want NFS3ERR_STALE", s)
	}
}

// TestRemoveAndLookupInOneDirectoryKeepOrder: LOOKUPs, REMOVEs and
// GETATTRs of names in one directory sent on one connection without
// waiting are served several at once, and each sees what the calls sent
// before it did: a LOOKUP before the REMOVE of its name finds it, one
// after does not, a GETATTR after it is STALE.
func TestRemoveAndLookupInOneDirectoryKeepOrder(t *testing.T) {
	cl := newCluster(t)
	srv := cl.serve(t, Config{Squash: SquashNone})
	d := mkIn(t, srv, meta.RootIno, "d", syscall.S_IFDIR|0o755)
	dfh := srv.s.handle(d.Ino, d.Gen)
	srv.s.ioHook = func(proc uint32) {
		if proc == procNFSRemove {
			for range 10 { // a slower REMOVE: a call it must not be overtaken by would be
				runtime.Gosched()
			}
		}
	}
	const n = 30
	rc := dialRaw(t, srv.addr)
	var out bytes.Buffer
	type want struct {
		what   string
		status uint32
	}
	wants := make(map[uint32]want)
	send := func(proc uint32, args []byte, w want) {
		rec, xid := rc.record(proc, args)
		out.Write(rec)
		wants[xid] = w
	}
	for i := range n {
		name := "f" + string(rune('a'+i%26)) + string(rune('0'+i/26))
		in := mkIn(t, srv, d.Ino, name, syscall.S_IFREG|0o644)
		fh := srv.s.handle(in.Ino, in.Gen)
		send(procNFSLookup, dirOpArgs(dfh, name), want{"LOOKUP before REMOVE", nfsOK})
		send(procNFSGetAttr, appendOpaque(nil, fh), want{"GETATTR before REMOVE", nfsOK})
		send(procNFSRemove, dirOpArgs(dfh, name), want{"REMOVE", nfsOK})
		send(procNFSLookup, dirOpArgs(dfh, name), want{"LOOKUP after REMOVE", nfsErrNoEnt})
		send(procNFSGetAttr, appendOpaque(nil, fh), want{"GETATTR after REMOVE", nfsErrStale})
		send(procNFSRemove, dirOpArgs(dfh, name), want{"second REMOVE", nfsErrNoEnt})
	}
	if _, err := rc.c.Write(out.Bytes()); err != nil {
		t.Fatal(err)
	}
	res := rc.replies(len(wants))
	for xid, w := range wants {
		if s := st(res[xid]); s != w.status {
			t.Errorf("%s (xid %d): status %d, want %d", w.what, xid, s, w.status)
		}
	}
	left, _, err := srv.v.ReadDir(context.Background(), vfs.Root, d.Ino, "", 100, false)
	if err != nil || len(left) != 0 {
		t.Fatalf("directory after the removals: %d entries (%v)", len(left), err)
	}
}

// TestAccessAnswersThePermissions: ACCESS grants of the bits asked only
// those the caller's permissions give (go-nfs granted every bit asked),
// root squashed as any other caller, nothing that writes on a read-only
// server.
func TestAccessAnswersThePermissions(t *testing.T) {
	cl := newCluster(t)
	srv := cl.serve(t, Config{})
	ro := cl.serve(t, Config{ReadOnly: true})
	ctx := context.Background()
	alice := vfs.Cred{Uid: 1000, Gid: 1000}
	home, err := srv.v.Create(ctx, alice, meta.CreateReq{Parent: meta.RootIno, Name: "home", Mode: syscall.S_IFDIR | 0o755, Excl: true})
	if err != nil {
		t.Fatal(err)
	}
	mk := func(name string, mode uint32) []byte {
		in, err := srv.v.Create(ctx, alice, meta.CreateReq{Parent: home.Ino, Name: name, Mode: syscall.S_IFREG | mode, Excl: true})
		if err != nil {
			t.Fatal(err)
		}
		return srv.s.handle(in.Ino, in.Gen)
	}
	private, shared, tool := mk("private", 0o600), mk("shared", 0o644), mk("tool", 0o755)
	dir := srv.s.handle(home.Ino, home.Gen)
	const all = access3Read | access3Lookup | access3Modify | access3Extend | access3Delete | access3Execute
	for _, c := range []struct {
		what     string
		rc       *rawConn
		uid, gid uint32
		fh       []byte
		want     uint32
	}{
		{"alice, her 0600 file", dialRaw(t, srv.addr), 1000, 1000, private, access3Read | access3Modify | access3Extend},
		{"bob, alice's 0600 file", dialRaw(t, srv.addr), 1001, 1001, private, 0},
		{"bob, alice's 0644 file", dialRaw(t, srv.addr), 1001, 1001, shared, access3Read},
		{"bob, alice's 0755 file", dialRaw(t, srv.addr), 1001, 1001, tool, access3Read | access3Execute},
		{"squashed root, alice's 0600 file", dialRaw(t, srv.addr), 0, 0, private, 0},
		{"alice, her 0755 directory", dialRaw(t, srv.addr), 1000, 1000, dir, access3Read | access3Lookup | access3Modify | access3Extend | access3Delete},
		{"bob, alice's 0755 directory", dialRaw(t, srv.addr), 1001, 1001, dir, access3Read | access3Lookup},
		{"alice, her 0600 file, read-only server", dialRaw(t, ro.addr), 1000, 1000, private, access3Read},
	} {
		res := c.rc.one(c.uid, c.gid, procNFSAccess, binary.BigEndian.AppendUint32(appendOpaque(nil, c.fh), all))
		if s := st(res); s != nfsOK {
			t.Errorf("%s: status %d", c.what, s)
			continue
		}
		at := 8
		if binary.BigEndian.Uint32(res[4:]) != 0 {
			at += 84
		}
		if got := binary.BigEndian.Uint32(res[at:]); got != c.want {
			t.Errorf("%s: ACCESS granted %#x, want %#x", c.what, got, c.want)
		}
	}
}
