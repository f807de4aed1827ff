package gwrpc_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"tessera/internal/auth"
	"tessera/internal/block"
	"tessera/internal/block/disk"
	"tessera/internal/client"
	"tessera/internal/gateway"
	"tessera/internal/gateway/gwrpc"
	"tessera/internal/kv/memkv"
	"tessera/internal/meta"
	"tessera/internal/meta/metarpc"
)

// env is a meta service in memory, one block store, a fileset over a
// file:// home, and a CA: gateway nodes serve real gRPC with mutual TLS
// on loopback.
type env struct {
	svc  *meta.Service
	st   block.Store
	ca   *auth.CA
	home string
	root meta.Ino
}

func newEnv(t *testing.T) *env {
	t.Helper()
	ctx := context.Background()
	svc, err := meta.New(memkv.New(), meta.Options{BlockSize: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.RegisterServer(ctx, meta.Server{ID: "b0", Addr: "disk", State: meta.StateUp}); err != nil {
		t.Fatal(err)
	}
	st, err := disk.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ca, err := auth.NewCA("test", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{svc: svc, st: st, ca: ca, home: t.TempDir()}
	d, err := svc.Create(ctx, meta.CreateReq{Parent: meta.RootIno, Name: "cache", Mode: syscall.S_IFDIR | 0o755, Excl: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.CreateFileset(ctx, meta.Fileset{Root: d.Ino, Home: "file://" + e.home, Mode: meta.ModeRO, ValidityLag: time.Hour}); err != nil {
		t.Fatal(err)
	}
	e.root = d.Ino
	return e
}

func (e *env) creds(t *testing.T, name string, role auth.Role) *auth.Credentials {
	t.Helper()
	cp, kp, err := e.ca.Issue(auth.Request{Name: name, Role: role, Hosts: []string{"127.0.0.1"}, Validity: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(cp, kp)
	if err != nil {
		t.Fatal(err)
	}
	c, err := auth.NewCredentials(cert, e.ca.PEM)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// node starts gateway id with its own data-path client.
func (e *env) node(t *testing.T, id string) *gwrpc.Node {
	t.Helper()
	return e.nodeBeating(t, id, 50*time.Millisecond)
}

// nodeBeating is node with a heartbeat of every (how often the gateway
// re-registers and takes the live list).
func (e *env) nodeBeating(t *testing.T, id string, every time.Duration) *gwrpc.Node {
	t.Helper()
	ctx := context.Background()
	c, err := client.New(ctx, client.Config{Meta: e.svc, Dial: func(meta.Server) (block.Store, error) { return e.st, nil },
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	n, err := gwrpc.StartNode(ctx, gwrpc.NodeConfig{Meta: e.svc, Data: c, ID: id, Listen: "127.0.0.1:0",
		Creds: e.creds(t, id, auth.RoleGateway), Heartbeat: every})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	n.SetRangeSize(128 << 10)
	return n
}

// put writes a file at home and lists the fileset root, so that it has
// a placeholder; it returns the inode.
func (e *env) put(t *testing.T, r *gwrpc.Router, name string, data []byte) meta.Ino {
	t.Helper()
	if err := os.WriteFile(filepath.Join(e.home, name), data, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := e.svc.SetGateway(ctx, e.root, meta.GatewayInfo{Fileset: e.root, State: meta.CachePlaceholder}, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ListDir(ctx, e.root); err != nil {
		t.Fatal(err)
	}
	in, err := e.svc.Lookup(ctx, e.root, name)
	if err != nil {
		t.Fatal(err)
	}
	return in.Ino
}

// read reads ino whole through a client of the block store.
func (e *env) read(t *testing.T, ino meta.Ino, size int) []byte {
	t.Helper()
	ctx := context.Background()
	c, err := client.New(ctx, client.Config{Meta: e.svc, Dial: func(meta.Server) (block.Store, error) { return e.st, nil },
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	in, err := e.svc.GetAttr(ctx, ino)
	if err != nil {
		t.Fatal(err)
	}
	h, _, err := c.Open(ctx, in, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release(ctx)
	got := make([]byte, size+10)
	n, err := h.Read(ctx, 0, got)
	if err != nil {
		t.Fatal(err)
	}
	return got[:n]
}

func randBytes(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, seed))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// TestRouterSplitsAndFailsOver: a mount's Router asks the owner of a file
// (rendezvous over the registered gateways), which splits the fetch with
// the other gateway over the network; with the owner of a second file
// stopped while the meta service still lists it, the Router asks the
// next gateway and the fetch completes.
func TestRouterSplitsAndFailsOver(t *testing.T) {
	e := newEnv(t)
	nodes := map[string]*gwrpc.Node{"gw0": e.node(t, "gw0"), "gw1": e.node(t, "gw1")}
	r := gwrpc.NewRouter(e.svc, e.creds(t, "mount", auth.RoleClientRW), nil)
	defer r.Close()
	ctx := context.Background()

	big := randBytes(1, 1<<20+77)
	ino := e.put(t, r, "big", big)
	in, err := r.Fetch(ctx, ino, 0, int64(len(big)))
	if err != nil {
		t.Fatal(err)
	}
	if in.Gateway == nil || in.Gateway.State != meta.CacheCached {
		t.Fatalf("after the fetch: %+v; want cached", in.Gateway)
	}
	for id, n := range nodes {
		if s := n.Stats(); s.Ranges == 0 {
			t.Errorf("gateway %s fetched no range of the split fetch: %+v", id, s)
		}
	}
	if got := e.read(t, ino, len(big)); !bytes.Equal(got, big) {
		t.Errorf("big reads back %d bytes that differ from home's", len(got))
	}

	// A file owned by gw0, with gw0 stopped but still registered.
	var name string
	var data []byte
	var owned meta.Ino
	for i := range 64 {
		name = "f" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		data = randBytes(uint64(10+i), 300<<10)
		owned = e.put(t, r, name, data)
		if gateway.Rendezvous(owned, []string{"gw0", "gw1"})[0] == 0 {
			break
		}
	}
	if gateway.Rendezvous(owned, []string{"gw0", "gw1"})[0] != 0 {
		t.Fatal("no file of 64 is owned by gw0")
	}
	nodes["gw0"].Close()
	live, err := r.Live(ctx)
	if err != nil || len(live) != 2 {
		t.Fatalf("live gateways right after gw0 stopped: %v, %v; want both still listed", live, err)
	}
	before := nodes["gw1"].Stats().Ranges
	if _, err := r.Fetch(ctx, owned, 0, int64(len(data))); err != nil {
		t.Fatalf("fetch of %s, owned by the stopped gw0: %v", name, err)
	}
	if nodes["gw1"].Stats().Ranges == before {
		t.Error("gw1 fetched nothing: the fetch did not go to the next owner")
	}
	if got := e.read(t, owned, len(data)); !bytes.Equal(got, data) {
		t.Errorf("%s reads back %d bytes that differ from home's", name, len(got))
	}
}

// TestPortRoles: a caller without a certificate is refused, a mount may
// list but not store ranges for a gateway, another gateway may.
func TestPortRoles(t *testing.T) {
	e := newEnv(t)
	n := e.node(t, "gw0")
	ctx := context.Background()
	if anon, err := gwrpc.Dial(n.Addr(), &auth.Credentials{CACert: e.ca.Cert, CA: certPool(e.ca)}); err == nil {
		_, err = anon.ListDir(ctx, e.root)
		anon.Close()
		if !errors.Is(err, auth.ErrUnauthenticated) {
			t.Errorf("ListDir without a certificate: %v; want ErrUnauthenticated", err)
		}
	}
	m, err := gwrpc.Dial(n.Addr(), e.creds(t, "mount", auth.RoleClientRO))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if _, err := m.ListDir(ctx, e.root); err != nil {
		t.Errorf("ListDir as a read-only mount: %v", err)
	}
	if err := m.FetchData(ctx, e.root, 0, 1); !errors.Is(err, auth.ErrDenied) {
		t.Errorf("FetchData as a mount: %v; want ErrDenied", err)
	}
	b, err := gwrpc.Dial(n.Addr(), e.creds(t, "blockd", auth.RoleBlockd))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := b.ListDir(ctx, e.root); !errors.Is(err, auth.ErrDenied) {
		t.Errorf("ListDir as a block server: %v; want ErrDenied", err)
	}
	p, err := gwrpc.Dial(n.Addr(), e.creds(t, "gw9", auth.RoleGateway))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.FetchData(ctx, e.root, -1, 1); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("FetchData of a negative offset by a gateway: %v; want EINVAL", err)
	}
}

func certPool(ca *auth.CA) *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// TestDialRefusesOtherRoles: a mount dialing an address it took from the
// registry refuses a server whose certificate is not a gateway's (here a
// meta service's, of the same CA).
func TestDialRefusesOtherRoles(t *testing.T) {
	e := newEnv(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		done <- metarpc.Serve(ln, e.svc, metarpc.ServeOptions{Creds: e.creds(t, "meta", auth.RoleMeta)})
	}()
	defer func() { ln.Close(); <-done }()
	r, err := gwrpc.Dial(ln.Addr().String(), e.creds(t, "mount", auth.RoleClientRW))
	if err == nil {
		r.Close()
		t.Fatal("dialed a meta service as a gateway")
	}
	if !strings.Contains(err.Error(), "not of role") {
		t.Errorf("the refusal does not say why: %v", err)
	}
}

// TestOwnerSplitsWithGatewaysJoinedSince: a gateway whose own live list
// is older than the gateways registered since (its next heartbeat is an
// hour away) shares a small miss's prefetch with all of them: it takes
// the live list when asked to fetch, not only at its heartbeat nor only
// for a fetch larger than a range. (TestGatewayProcessesIngest's lost
// gateway: the owner's list was up to a heartbeat old when the read began.)
func TestOwnerSplitsWithGatewaysJoinedSince(t *testing.T) {
	e := newEnv(t)
	nodes := []*gwrpc.Node{e.nodeBeating(t, "gw0", time.Hour), e.node(t, "gw1"), e.node(t, "gw2")}
	r := gwrpc.NewRouter(e.svc, e.creds(t, "mount", auth.RoleClientRW), nil)
	defer r.Close()
	ctx := context.Background()
	data := randBytes(3, 1<<20) // 16 blocks, eight ranges of two
	ino := e.put(t, r, "seq", data)

	c, err := gwrpc.Dial(nodes[0].Addr(), e.creds(t, "mount2", auth.RoleClientRW))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Fetch(ctx, ino, 0, 100); err != nil { // one block; the rest is prefetch
		t.Fatal(err)
	}
	var in meta.Inode
	for range 3000 { // the prefetch runs in the background on gw0
		if in, err = e.svc.GetAttr(ctx, ino); err != nil {
			t.Fatal(err)
		}
		if in.Gateway.State == meta.CacheCached {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if in.Gateway.State != meta.CacheCached {
		t.Fatalf("the file after its prefetch: %v %v; want cached", in.Gateway.State, in.Gateway.Cached)
	}
	for i, n := range nodes {
		if s := n.Stats(); s.Ranges == 0 || s.BytesFetch == 0 {
			t.Errorf("gw%d fetched no range of the miss and its prefetch: %+v", i, s)
		}
		if f := n.Fallbacks(); f != 0 {
			t.Errorf("gw%d stored %d ranges of gone peers; none was gone", i, f)
		}
	}
	if got := e.read(t, ino, len(data)); !bytes.Equal(got, data) {
		t.Errorf("seq reads back %d bytes that differ from home's", len(got))
	}
}

// TestRouterErrorNamesGateway: an error a gateway answers reaches the
// mount naming that gateway (its registry name and address), not only
// the address as a meta call's error would.
func TestRouterErrorNamesGateway(t *testing.T) {
	e := newEnv(t)
	n := e.node(t, "gw0")
	defer n.Close()
	r := gwrpc.NewRouter(e.svc, e.creds(t, "mount", auth.RoleClientRW), nil)
	defer r.Close()
	_, err := r.Fetch(context.Background(), meta.RootIno, 0, 1) // in no fileset
	if err == nil || !strings.HasPrefix(err.Error(), "gateway gw0 (") {
		t.Fatalf("fetch of an inode in no fileset: %v; want an error starting with the gateway's name", err)
	}
}
