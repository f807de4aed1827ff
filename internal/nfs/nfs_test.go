package nfs

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	nfsc "github.com/willscott/go-nfs-client/nfs"
	"github.com/willscott/go-nfs-client/nfs/rpc"

	"tessera/internal/block"
	"tessera/internal/block/blocktest"
	"tessera/internal/client"
	"tessera/internal/clock"
	"tessera/internal/kv/memkv"
	"tessera/internal/meta"
	"tessera/internal/vfs"
)

// cluster is a meta service and a block store that servers share.
type cluster struct {
	svc *meta.Service
	st  *blocktest.MemStore
	// api, when set, is what the servers' clients call instead of svc,
	// with meta sessions (as up.StartNFS wires them).
	api meta.API
}

func newCluster(t testing.TB) *cluster {
	t.Helper()
	ctx := context.Background()
	svc, err := meta.New(memkv.New(), meta.Options{BlockSize: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.RegisterServer(ctx, meta.Server{ID: "b0", Addr: "mem", State: "up"}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.SetAttr(ctx, meta.RootIno, meta.SetAttrReq{Valid: meta.SetMode, Mode: 0o1777}); err != nil {
		t.Fatal(err)
	}
	return &cluster{svc: svc, st: blocktest.NewMem()}
}

// server is a running NFS server of the cluster: its own client, vfs
// and listener on loopback.
type server struct {
	addr string
	v    *vfs.FS
	s    *Server
	stop func()
}

func (cl *cluster) serve(t testing.TB, cfg Config) *server {
	t.Helper()
	return cl.serveWith(t, cfg, "", nil)
}

// serveWith is serve with the client's default policy and vfs's clock
// (nil: the machine's).
func (cl *cluster) serveWith(t testing.TB, cfg Config, policy string, clk clock.Clock) *server {
	t.Helper()
	return cl.serveVFS(t, cfg, policy, vfs.Options{Clock: clk})
}

// serveVFS is serveWith with vfs's options (its attribute cache always on).
func (cl *cluster) serveVFS(t testing.TB, cfg Config, policy string, vopts vfs.Options) *server {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cc := client.Config{
		Meta:   cl.svc,
		Dial:   func(meta.Server) (block.Store, error) { return cl.st, nil },
		Logger: slog.New(slog.DiscardHandler),
		Policy: policy,
	}
	if cl.api != nil {
		cc.Meta, cc.Sessions = cl.api, true
	}
	c, err := client.New(ctx, cc)
	if err != nil {
		t.Fatal(err)
	}
	vopts.Logger, vopts.AttrCache = slog.New(slog.DiscardHandler), true
	v := vfs.New(c, vopts)
	cfg.Logger = slog.New(slog.DiscardHandler)
	cfg.ClusterID = 42
	var verf [8]byte
	rand.Read(verf[:])
	s, err := New(ctx, v, cfg, verf)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("serve: %v", err)
			}
			v.Close()
			c.Close(context.Background())
		})
	}
	t.Cleanup(stop)
	return &server{addr: ln.Addr().String(), v: v, s: s, stop: stop}
}

// mount mounts the export as uid:gid with the Go NFS client.
func mount(t *testing.T, addr string, uid, gid uint32) *nfsc.Target {
	t.Helper()
	c, err := dialRPC(t, addr)
	if err != nil {
		t.Fatal(err)
	}
	m := nfsc.Mount{Client: c}
	target, err := m.Mount("/", rpc.NewAuthUnix("test", uid, gid).Auth())
	if err != nil {
		c.Close()
		t.Fatalf("mount as %d:%d: %v", uid, gid, err)
	}
	t.Cleanup(func() { target.Close() })
	return target
}

func writeFile(t *testing.T, target *nfsc.Target, p string, data []byte) {
	t.Helper()
	f, err := target.OpenFile(p, 0o644)
	if err != nil {
		t.Fatalf("open %s for writing: %v", p, err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatalf("write %s: %v", p, err)
	}
	if err := f.Close(); err != nil {
		t.Fatalf("close %s: %v", p, err)
	}
}

func readFile(t *testing.T, target *nfsc.Target, p string) []byte {
	t.Helper()
	f, err := target.Open(p)
	if err != nil {
		t.Fatalf("open %s: %v", p, err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatalf("read %s: %v", p, err)
	}
	return b
}

func TestCreateWriteReadRenameRemoveSymlink(t *testing.T) {
	cl := newCluster(t)
	srv := cl.serve(t, Config{Squash: SquashNone})
	target := mount(t, srv.addr, 1000, 1000)

	if _, err := target.Mkdir("dir", 0o755); err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 3<<20+12345) // several WRITEs and READs
	rand.Read(data)
	writeFile(t, target, "dir/a", data)
	if got := readFile(t, target, "dir/a"); !bytes.Equal(got, data) {
		t.Fatalf("read back %d bytes, want the %d written", len(got), len(data))
	}
	fa, err := target.Getattr("dir/a")
	if err != nil {
		t.Fatal(err)
	}
	if fa.UID != 1000 || fa.GID != 1000 || fa.Filesize != uint64(len(data)) {
		t.Fatalf("attributes uid %d gid %d size %d; want 1000 1000 %d", fa.UID, fa.GID, fa.Filesize, len(data))
	}
	if err := target.Rename("dir/a", "dir/b"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := target.Lookup("dir/a"); err == nil {
		t.Fatal("dir/a still found after the rename")
	}
	if got := readFile(t, target, "dir/b"); !bytes.Equal(got, data) {
		t.Fatal("renamed file reads differently")
	}
	if err := target.Symlink("b", "dir/link"); err != nil {
		t.Fatal(err)
	}
	ents, err := target.ReadDirPlus("dir")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.FileName)
	}
	sort.Strings(names) // the client returns them in no order
	if strings.Join(names, ",") != "b,link" {
		t.Fatalf("listing %v, want b link (the client leaves out . and ..)", names)
	}
	if err := target.Remove("dir/b"); err != nil {
		t.Fatal(err)
	}
	if err := target.Remove("dir/link"); err != nil {
		t.Fatal(err)
	}
	if err := target.RmDir("dir"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := target.Lookup("dir"); err == nil {
		t.Fatal("dir still found after rmdir")
	}
	// The data is in the cluster: read through the meta service.
	in, err := cl.svc.Lookup(context.Background(), meta.RootIno, "dir")
	if err == nil {
		t.Fatalf("meta service still has dir: inode %d", in.Ino)
	}
}

func TestPermissionsAsNonRoot(t *testing.T) {
	cl := newCluster(t)
	srv := cl.serve(t, Config{})
	alice := mount(t, srv.addr, 1000, 1000)
	bob := mount(t, srv.addr, 1001, 1001)

	if _, err := alice.Mkdir("home", 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, alice, "home/notes", []byte("alice's"))
	if err := alice.Setattr("home/notes", nfsc.Sattr3{Mode: nfsc.SetMode{SetIt: true, Mode: 0o600}}); err != nil {
		t.Fatal(err)
	}
	f, err := bob.Open("home/notes")
	if err != nil {
		t.Fatal(err) // the client opens without asking the server
	}
	if _, err := io.ReadAll(f); !isAccess(err) {
		t.Fatalf("bob's read of alice's 0600 file: %v, want NFS3ERR_ACCES", err)
	}
	_, err = bob.Create("home/intruder", 0o644)
	if !isAccess(err) {
		t.Fatalf("bob creating in alice's 0755 directory: %v, want NFS3ERR_ACCES", err)
	}
	err = bob.Remove("home/notes")
	if !isAccess(err) {
		t.Fatalf("bob removing from alice's 0755 directory: %v, want NFS3ERR_ACCES", err)
	}
	// Root is squashed by default: root may not read alice's file either.
	root := mount(t, srv.addr, 0, 0)
	if f, err := root.Open("home/notes"); err == nil {
		if _, rerr := io.ReadAll(f); rerr == nil {
			t.Fatal("squashed root read alice's 0600 file")
		}
	}
	if got := readFile(t, alice, "home/notes"); string(got) != "alice's" {
		t.Fatalf("alice reads %q", got)
	}
}

func isAccess(err error) bool {
	var e *nfsc.Error
	return errors.As(err, &e) && e.ErrorNum == nfsc.NFS3ErrAcces
}

func TestHandleAfterRestartAndOnAnotherServer(t *testing.T) {
	cl := newCluster(t)
	a := cl.serve(t, Config{Squash: SquashNone})
	ta := mount(t, a.addr, 0, 0)
	writeFile(t, ta, "kept", []byte("survives"))
	writeFile(t, ta, "gone", []byte("removed"))
	_, fh, err := ta.Lookup("kept")
	if err != nil {
		t.Fatal(err)
	}
	_, gone, err := ta.Lookup("gone")
	if err != nil {
		t.Fatal(err)
	}
	ta.Close()
	a.stop()

	// A new server (a restart, or another node of the cluster) takes the
	// handle without ever having seen it.
	b := cl.serve(t, Config{Squash: SquashNone})
	tb := mount(t, b.addr, 0, 0)
	attr, err := tb.GetAttr(fh)
	if err != nil {
		t.Fatalf("getattr with the first server's handle: %v", err)
	}
	if attr.Filesize != uint64(len("survives")) {
		t.Fatalf("size %d through the old handle", attr.Filesize)
	}
	if err := tb.Remove("gone"); err != nil {
		t.Fatal(err)
	}
	_, err = tb.GetAttr(gone)
	var e *nfsc.Error
	if !errors.As(err, &e) || e.ErrorNum != nfsc.NFS3ErrStale {
		t.Fatalf("getattr of a removed file's handle: %v, want NFS3ERR_STALE", err)
	}
	forged := append([]byte(nil), fh...)
	binary.BigEndian.PutUint64(forged[8:], 7) // another cluster
	if _, err := tb.GetAttr(forged); !errors.As(err, &e) || e.ErrorNum != nfsc.NFS3ErrStale {
		t.Fatalf("getattr of another cluster's handle: %v, want NFS3ERR_STALE", err)
	}
}

func TestBadRecordsCloseOnlyTheirConnection(t *testing.T) {
	cl := newCluster(t)
	srv := cl.serve(t, Config{})
	good := mount(t, srv.addr, 1000, 1000)
	for _, tc := range []struct {
		name string
		rec  []byte
	}{
		{"oversized record", mark(maxRecordSize+1, true)},
		{"fragmented record", append(mark(44, false), make([]byte, 44)...)},
		{"credentials past the record", append(mark(40), callHeader(0, 1, 1<<30)...)},
		{"huge file handle", append(mark(44), append(callHeader(1, 0, 0), 0xff, 0xff, 0xff, 0xff)...)},
	} {
		c, err := net.Dial("tcp", srv.addr)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write(tc.rec); err != nil {
			t.Fatal(err)
		}
		c.SetReadDeadline(time.Now().Add(time.Minute))
		if n, err := c.Read(make([]byte, 64)); err == nil {
			t.Errorf("%s: got a %d-byte answer, want the connection closed", tc.name, n)
		}
		c.Close()
	}
	writeFile(t, good, "after", []byte("still served"))
	if got := readFile(t, good, "after"); string(got) != "still served" {
		t.Fatalf("read %q after the bad records", got)
	}
}

// mark is a record mark of n bytes (last fragment unless told).
func mark(n uint32, last ...bool) []byte {
	if len(last) == 0 || last[0] {
		n |= 1 << 31
	}
	return binary.BigEndian.AppendUint32(nil, n)
}

// callHeader is an NFS call of procedure proc with an AUTH_NONE verifier
// and credentials of flavor with the declared body length credLen (no
// body).
func callHeader(proc, flavor, credLen uint32) []byte {
	var b []byte
	for _, v := range []uint32{1, 0, 2, progNFS, 3, proc, flavor, credLen, 0, 0} {
		b = binary.BigEndian.AppendUint32(b, v)
	}
	return b
}

func TestAllowRefusesOtherClients(t *testing.T) {
	cl := newCluster(t)
	srv := cl.serve(t, Config{Allow: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}})
	c, err := net.Dial("tcp", srv.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(time.Minute))
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("a client outside --allow: read %v, want the connection closed (EOF)", err)
	}
}

func TestReadOnlyRefusesWrites(t *testing.T) {
	cl := newCluster(t)
	rw := cl.serve(t, Config{Squash: SquashNone})
	writeFile(t, mount(t, rw.addr, 0, 0), "f", []byte("x"))
	ro := cl.serve(t, Config{Squash: SquashNone, ReadOnly: true})
	target := mount(t, ro.addr, 0, 0)
	if got := readFile(t, target, "f"); string(got) != "x" {
		t.Fatalf("read %q on the read-only server", got)
	}
	_, err := target.Create("g", 0o644)
	var e *nfsc.Error
	if !errors.As(err, &e) || e.ErrorNum != nfsc.NFS3ErrROFS {
		t.Fatalf("create on a read-only server: %v, want NFS3ERR_ROFS", err)
	}
}

func TestExportIsTheClientsRoot(t *testing.T) {
	cl := newCluster(t)
	ctx := context.Background()
	sub, err := cl.svc.Create(ctx, meta.CreateReq{Parent: meta.RootIno, Name: "sub", Mode: 0o40777, Excl: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.svc.Create(ctx, meta.CreateReq{Parent: sub.Ino, Name: "inside", Mode: 0o100644, Excl: true}); err != nil {
		t.Fatal(err)
	}
	srv := cl.serve(t, Config{Export: "/sub", Squash: SquashNone})
	c, err := dialRPC(t, srv.addr)
	if err != nil {
		t.Fatal(err)
	}
	m := nfsc.Mount{Client: c}
	if _, err := m.Mount("/elsewhere", rpc.AuthNull); err == nil {
		t.Fatal("mounting a path not exported worked")
	}
	target := mount(t, srv.addr, 0, 0)
	if _, _, err := target.Lookup("inside"); err != nil {
		t.Fatalf("lookup in the export: %v", err)
	}
	if _, _, err := target.Lookup("sub"); err == nil {
		t.Fatal("the export's own name found inside it: the root is not the export")
	}
	_ = os.ErrNotExist
}

func FuzzParseCall(f *testing.F) {
	f.Add(callHeader(1, 1, 0))
	f.Add(append(callHeader(7, 0, 0), 0, 0, 0, 40))
	f.Add(append(callHeader(6, 0, 0), make([]byte, 60)...))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := parseCall(b)
		if err != nil {
			return
		}
		if len(c.cred.Groups) > vfs.MaxGroups {
			t.Fatalf("%d groups accepted", len(c.cred.Groups))
		}
		if c.countAt > 0 && c.countAt+4 > len(b) {
			t.Fatalf("READ count at %d of a %d-byte record", c.countAt, len(b))
		}
	})
}

// dialRPC connects the Go NFS client to addr. The client binds a random
// local port of its own choosing (49152-65535, seeded by the clock), which
// may be in use: it is tried again, a bounded number of times.
func dialRPC(t testing.TB, addr string) (*rpc.Client, error) {
	t.Helper()
	var err error
	for range 20 {
		var c *rpc.Client
		if c, err = rpc.DialTCP("tcp", addr, false); err == nil {
			return c, nil
		}
		if !errors.Is(err, syscall.EADDRINUSE) {
			return nil, err
		}
	}
	return nil, err
}

// call sends one RPC call record on c and returns the reply record.
func rawCall(t *testing.T, c net.Conn, prog, vers, proc uint32, args []byte) []byte {
	t.Helper()
	var b []byte
	for _, v := range []uint32{7, 0, 2, prog, vers, proc, 0, 0, 0, 0} { // AUTH_NONE, AUTH_NONE
		b = binary.BigEndian.AppendUint32(b, v)
	}
	b = append(b, args...)
	if _, err := c.Write(append(mark(uint32(len(b))), b...)); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(time.Minute))
	var m [4]byte
	if _, err := io.ReadFull(c, m[:]); err != nil {
		t.Fatal(err)
	}
	reply := make([]byte, binary.BigEndian.Uint32(m[:])&^(1<<31))
	if _, err := io.ReadFull(c, reply); err != nil {
		t.Fatal(err)
	}
	return reply
}

// TestUnknownProceduresAndMountExport: an unknown procedure gets
// PROC_UNAVAIL (3; go-nfs sent 2, PROG_MISMATCH, without the version range
// that must follow it, which libnfs could not decode), and MOUNT EXPORT
// lists the export.
func TestUnknownProceduresAndMountExport(t *testing.T) {
	cl := newCluster(t)
	srv := cl.serve(t, Config{})
	c, err := net.Dial("tcp", srv.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	reply := rawCall(t, c, progNFS, 3, 99, nil)
	// xid, REPLY, MSG_ACCEPTED, verifier (flavor, length), accept_stat
	if len(reply) < 24 || binary.BigEndian.Uint32(reply[20:]) != 3 {
		t.Fatalf("unknown procedure: reply %x, want accept_stat 3 (PROC_UNAVAIL)", reply)
	}
	reply = rawCall(t, c, progMount, 3, mountExport, nil)
	want := []byte{0, 0, 0, 1, 0, 0, 0, 1, '/', 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	if len(reply) != 24+len(want) || binary.BigEndian.Uint32(reply[20:]) != 0 || !bytes.Equal(reply[24:], want) {
		t.Fatalf("MOUNT EXPORT: reply %x, want success and the export list %x", reply, want)
	}
	// The connection still serves NFS after both.
	if reply := rawCall(t, c, progNFS, 3, 0, nil); binary.BigEndian.Uint32(reply[20:]) != 0 {
		t.Fatalf("NFS NULL after: reply %x", reply)
	}
}
