package nfs

import (
	"context"
	"encoding/binary"
	"sync"
	"syscall"
	"testing"

	"tessera/internal/meta"
	"tessera/internal/vfs"
)

// sattr is a sattr3 for tests: nil fields are not set.
type sattr struct {
	mode *uint32
	size *uint64
}

func (s sattr) append(b []byte) []byte {
	if s.mode != nil {
		b = binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(b, 1), *s.mode)
	} else {
		b = binary.BigEndian.AppendUint32(b, 0)
	}
	b = binary.BigEndian.AppendUint32(b, 0) // uid
	b = binary.BigEndian.AppendUint32(b, 0) // gid
	if s.size != nil {
		b = binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint32(b, 1), *s.size)
	} else {
		b = binary.BigEndian.AppendUint32(b, 0)
	}
	return binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(b, dontChange), dontChange)
}

func u32p(v uint32) *uint32 { return &v }
func u64p(v uint64) *uint64 { return &v }

func createArgs(dir []byte, name string, how uint32, s sattr) []byte {
	b := binary.BigEndian.AppendUint32(dirOpArgs(dir, name), how)
	if how == createExclusive {
		return append(b, 1, 2, 3, 4, 5, 6, 7, 8)
	}
	return s.append(b)
}

func mkdirArgs(dir []byte, name string, mode uint32) []byte {
	return sattr{mode: &mode}.append(dirOpArgs(dir, name))
}

// setattrArgs is SETATTR's arguments; guard, if not nil, is the ctime
// (seconds, nanoseconds) the change is guarded by.
func setattrArgs(fh []byte, s sattr, guard []uint32) []byte {
	b := s.append(appendOpaque(nil, fh))
	if guard == nil {
		return binary.BigEndian.AppendUint32(b, 0)
	}
	return binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(b, 1), guard[0]), guard[1])
}

// fattr3 fields read by the tests: their offsets in an fattr3.
const (
	faMode  = 4
	faUid   = 12
	faSize  = 20
	faCtime = 76
)

// created returns a CREATE's or MKDIR's status, handle and fattr3.
func created(t *testing.T, res []byte) (uint32, []byte, []byte) {
	t.Helper()
	if s := st(res); s != nfsOK {
		return s, nil, nil
	}
	if binary.BigEndian.Uint32(res[4:]) != 1 {
		t.Fatal("no handle in the result")
	}
	n := binary.BigEndian.Uint32(res[8:])
	fh := res[12 : 12+n]
	at := 12 + int(n+3)&^3
	if binary.BigEndian.Uint32(res[at:]) != 1 {
		t.Fatal("no attributes in the result")
	}
	return nfsOK, fh, res[at+4 : at+4+84]
}

// setattrPost returns a SETATTR's status and its fattr3 after (nil: none).
func setattrPost(res []byte) (uint32, []byte) {
	at := 8 // status, pre_op_attr's bool
	if binary.BigEndian.Uint32(res[4:]) == 1 {
		at += 24 // wcc_attr
	}
	if binary.BigEndian.Uint32(res[at:]) != 1 {
		return st(res), nil
	}
	return st(res), res[at+4 : at+4+84]
}

func fa32(a []byte, at int) uint32 { return binary.BigEndian.Uint32(a[at:]) }

// TestCreateMkdirSetattrServedByTheGate: CREATE, MKDIR and SETATTR are
// answered by the gate (seen by its hook; go-nfs answered them before),
// with the modes and the permission rules of RFC 1813 and POSIX: GUARDED
// and MKDIR fail with EXIST on a name there, UNCHECKED returns the file
// there and applies only the size asked (go-nfs emptied it), a directory
// there is EXIST, EXCLUSIVE is NOTSUPP; a create needs write permission
// on the directory (ACCES), a chmod the ownership (PERM); a SETATTR
// guarded by another ctime is NOT_SYNC and changes nothing.
func TestCreateMkdirSetattrServedByTheGate(t *testing.T) {
	cl := newCluster(t)
	srv := cl.serve(t, Config{Squash: SquashNone})
	var mu sync.Mutex
	seen := map[uint32]int{}
	srv.s.ioHook = func(proc uint32) {
		mu.Lock()
		seen[proc]++
		mu.Unlock()
	}
	rc := dialRaw(t, srv.addr)
	const alice, bob = 1000, 1001
	root := rootHandle(srv)

	s, dfh, da := created(t, rc.one(alice, alice, procNFSMkdir, mkdirArgs(root, "d", 0o750)))
	if s != nfsOK {
		t.Fatalf("MKDIR d: status %d", s)
	}
	if m, u := fa32(da, faMode)&0o7777, fa32(da, faUid); m != 0o750 || u != alice {
		t.Errorf("MKDIR d: mode %o uid %d, want 750 and %d", m, u, alice)
	}
	if s := st(rc.one(alice, alice, procNFSMkdir, mkdirArgs(root, "d", 0o750))); s != nfsErrExist {
		t.Errorf("MKDIR d again: status %d, want EXIST", s)
	}
	s, ffh, fa := created(t, rc.one(alice, alice, procNFSCreate, createArgs(dfh, "f", createGuarded, sattr{mode: u32p(0o640)})))
	if s != nfsOK {
		t.Fatalf("CREATE d/f: status %d", s)
	}
	if m, u := fa32(fa, faMode)&0o7777, fa32(fa, faUid); m != 0o640 || u != alice {
		t.Errorf("CREATE d/f: mode %o uid %d, want 640 and %d", m, u, alice)
	}
	if s := st(rc.one(alice, alice, procNFSCreate, createArgs(dfh, "f", createGuarded, sattr{}))); s != nfsErrExist {
		t.Errorf("GUARDED CREATE of d/f there: status %d, want EXIST", s)
	}
	if res := rc.one(alice, alice, procNFSWrite, writeArgsOf(ffh, 0, []byte("hello"), fileSync)); st(res) != nfsOK {
		t.Fatalf("WRITE d/f: status %d", st(res))
	}
	s, fh2, fa2 := created(t, rc.one(alice, alice, procNFSCreate, createArgs(dfh, "f", createUnchecked, sattr{mode: u32p(0o600)})))
	if s != nfsOK || string(fh2) != string(ffh) {
		t.Fatalf("UNCHECKED CREATE of d/f there: status %d, same handle %v", s, string(fh2) == string(ffh))
	}
	if sz, m := binary.BigEndian.Uint64(fa2[faSize:]), fa32(fa2, faMode)&0o7777; sz != 5 || m != 0o640 {
		t.Errorf("UNCHECKED CREATE of d/f there without a size: size %d mode %o, want 5 and 640 (left as it was)", sz, m)
	}
	if s, _, fa3 := created(t, rc.one(alice, alice, procNFSCreate, createArgs(dfh, "f", createUnchecked, sattr{size: u64p(0)}))); s != nfsOK || binary.BigEndian.Uint64(fa3[faSize:]) != 0 {
		t.Errorf("UNCHECKED CREATE of d/f with size 0: status %d", s)
	}
	for _, c := range []struct {
		what     string
		uid      uint32
		args     []byte
		proc     uint32
		want     uint32
		wantProc bool
	}{
		{"UNCHECKED CREATE of a directory's name", alice, createArgs(root, "d", createUnchecked, sattr{}), procNFSCreate, nfsErrExist, true},
		{"EXCLUSIVE CREATE", alice, createArgs(dfh, "x", createExclusive, sattr{}), procNFSCreate, nfsErrNotSupp, true},
		{"CREATE in a file", alice, createArgs(ffh, "x", createGuarded, sattr{}), procNFSCreate, nfsErrNotDir, true},
		{"bob's CREATE in alice's 0750 directory", bob, createArgs(dfh, "x", createGuarded, sattr{}), procNFSCreate, nfsErrAcces, true},
		{"bob's MKDIR in alice's 0750 directory", bob, mkdirArgs(dfh, "x", 0o755), procNFSMkdir, nfsErrAcces, true},
		{"CREATE of ..", alice, createArgs(dfh, "..", createGuarded, sattr{}), procNFSCreate, nfsErrInval, true},
		{"bob's chmod of alice's file", bob, setattrArgs(ffh, sattr{mode: u32p(0o777)}, nil), procNFSSetAttr, nfsErrPerm, true},
		{"chmod guarded by another ctime", alice, setattrArgs(ffh, sattr{mode: u32p(0o777)}, []uint32{1, 2}), procNFSSetAttr, nfsErrNotSync, true},
	} {
		if s := st(rc.one(c.uid, c.uid, c.proc, c.args)); s != c.want {
			t.Errorf("%s: status %d, want %d", c.what, s, c.want)
		}
	}
	in, err := srv.v.GetAttr(context.Background(), meta.Ino(binary.BigEndian.Uint64(fa[52:])))
	if err != nil {
		t.Fatal(err)
	}
	if in.Mode&0o7777 != 0o640 {
		t.Errorf("after the refused chmods: mode %o, want 640", in.Mode&0o7777)
	}
	// The ctime as sent (go-nfs's encoding of attributes, which the gate
	// keeps: the mtime).
	guard := []uint32{uint32(in.Mtime / 1e9), uint32(in.Mtime % 1e9)}
	s, post := setattrPost(rc.one(alice, alice, procNFSSetAttr, setattrArgs(ffh, sattr{mode: u32p(0o604)}, guard)))
	if s != nfsOK || post == nil || fa32(post, faMode)&0o7777 != 0o604 {
		t.Fatalf("chmod 604 guarded by the ctime: status %d, attributes %x", s, post)
	}
	if res := rc.one(alice, alice, procNFSWrite, writeArgsOf(ffh, 0, []byte("hello"), fileSync)); st(res) != nfsOK {
		t.Fatalf("WRITE d/f: status %d", st(res))
	}
	s, post = setattrPost(rc.one(alice, alice, procNFSSetAttr, setattrArgs(ffh, sattr{size: u64p(2)}, nil)))
	if s != nfsOK || post == nil || binary.BigEndian.Uint64(post[faSize:]) != 2 {
		t.Fatalf("truncate to 2: status %d, attributes %x", s, post)
	}
	if s, data := readData(t, rc.one(alice, alice, procNFSRead, readArgsOf(ffh, 0, 100))); s != nfsOK || string(data) != "he" {
		t.Errorf("READ after the truncate: status %d, %q, want \"he\"", s, data)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, p := range []uint32{procNFSCreate, procNFSMkdir, procNFSSetAttr} {
		if seen[p] == 0 {
			t.Errorf("procedure %d was not served by the gate", p)
		}
	}
}

// TestCreateThenLookupPipelined: CREATEs and MKDIRs sent without waiting
// for replies, each followed by a LOOKUP of its name, in two directories:
// every LOOKUP finds what was created before it in its directory.
func TestCreateThenLookupPipelined(t *testing.T) {
	cl := newCluster(t)
	srv := cl.serve(t, Config{Squash: SquashNone})
	dirs := [][]byte{}
	for _, n := range []string{"a", "b"} {
		in := mkIn(t, srv, meta.RootIno, n, syscall.S_IFDIR|0o777)
		dirs = append(dirs, srv.s.handle(in.Ino, in.Gen))
	}
	rc := dialRaw(t, srv.addr)
	var out []byte
	lookups := map[uint32]string{}
	for i := range 40 {
		d := dirs[i%2]
		name := "n" + string(rune('a'+i%26)) + string(rune('0'+i/26))
		var rec []byte
		if i%3 == 0 {
			rec, _ = rc.recordAs(1000, 1000, procNFSMkdir, mkdirArgs(d, name, 0o755))
		} else {
			rec, _ = rc.recordAs(1000, 1000, procNFSCreate, createArgs(d, name, createGuarded, sattr{mode: u32p(0o644)}))
		}
		out = append(out, rec...)
		rec, xid := rc.recordAs(1000, 1000, procNFSLookup, dirOpArgs(d, name))
		out = append(out, rec...)
		lookups[xid] = name
	}
	if _, err := rc.c.Write(out); err != nil {
		t.Fatal(err)
	}
	res := rc.replies(80)
	for xid, res := range res {
		if name, ok := lookups[xid]; ok && st(res) != nfsOK {
			t.Errorf("LOOKUP %s after its create: status %d", name, st(res))
		} else if !ok && st(res) != nfsOK {
			t.Errorf("create (xid %d): status %d", xid, st(res))
		}
	}
}

// TestReadOnlyIdentityRefusesChanges: a server whose identity may only
// read (vfs.Options.ReadOnly, a client-ro certificate) answers ACCESS with
// no bit that changes a file or directory, and every change with
// NFS3ERR_ROFS, though --read-only was not given.
func TestReadOnlyIdentityRefusesChanges(t *testing.T) {
	cl := newCluster(t)
	rw := cl.serve(t, Config{Squash: SquashNone})
	ro := cl.serveVFS(t, Config{Squash: SquashNone}, "", vfs.Options{ReadOnly: true})
	ctx := context.Background()
	alice := vfs.Cred{Uid: 1000, Gid: 1000}
	d, err := rw.v.Create(ctx, alice, meta.CreateReq{Parent: meta.RootIno, Name: "d", Mode: syscall.S_IFDIR | 0o755, Excl: true})
	if err != nil {
		t.Fatal(err)
	}
	f, err := rw.v.Create(ctx, alice, meta.CreateReq{Parent: d.Ino, Name: "f", Mode: syscall.S_IFREG | 0o644, Excl: true})
	if err != nil {
		t.Fatal(err)
	}
	dfh, ffh := ro.s.handle(d.Ino, d.Gen), ro.s.handle(f.Ino, f.Gen)
	rc := dialRaw(t, ro.addr)
	const all = access3Read | access3Lookup | access3Modify | access3Extend | access3Delete | access3Execute
	for _, c := range []struct {
		fh   []byte
		want uint32
	}{{dfh, access3Read | access3Lookup}, {ffh, access3Read}} {
		res := rc.one(1000, 1000, procNFSAccess, binary.BigEndian.AppendUint32(appendOpaque(nil, c.fh), all))
		at := 8
		if binary.BigEndian.Uint32(res[4:]) != 0 {
			at += 84
		}
		if s, got := st(res), binary.BigEndian.Uint32(res[at:]); s != nfsOK || got != c.want {
			t.Errorf("ACCESS: status %d, granted %#x, want %#x", s, got, c.want)
		}
	}
	for _, c := range []struct {
		what string
		proc uint32
		args []byte
	}{
		{"CREATE", procNFSCreate, createArgs(dfh, "x", createGuarded, sattr{})},
		{"MKDIR", procNFSMkdir, mkdirArgs(dfh, "x", 0o755)},
		{"SETATTR", procNFSSetAttr, setattrArgs(ffh, sattr{mode: u32p(0o600)}, nil)},
		{"WRITE", procNFSWrite, writeArgsOf(ffh, 0, []byte("x"), fileSync)},
		{"REMOVE", procNFSRemove, dirOpArgs(dfh, "f")},
	} {
		if s := st(rc.one(1000, 1000, c.proc, c.args)); s != nfsErrROFS {
			t.Errorf("%s: status %d, want ROFS", c.what, s)
		}
	}
}
