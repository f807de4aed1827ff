package metarpc_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"tessera/internal/auth"
	"tessera/internal/kv"
	"tessera/internal/kv/memkv"
	"tessera/internal/meta"
	"tessera/internal/meta/metarpc"
)

// slowListener delays every write of its connections: a meta process
// far away.
type slowListener struct {
	net.Listener
	delay time.Duration
}

func (l slowListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return slowConn{c, l.delay}, nil
}

type slowConn struct {
	net.Conn
	delay time.Duration
}

func (c slowConn) Write(b []byte) (int, error) { time.Sleep(c.delay); return c.Conn.Write(b) }

// serveInfo serves api with cluster info on a loopback port, delayed by
// delay; stop closes the port.
func serveInfo(t *testing.T, api meta.API, info metarpc.ClusterInfo, delay time.Duration) (string, func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var l net.Listener = ln
	if delay > 0 {
		l = slowListener{ln, delay}
	}
	done := make(chan error, 1)
	go func() { done <- metarpc.Serve(l, api, metarpc.ServeOptions{Cluster: info}) }()
	once := false
	stop := func() {
		if !once {
			once = true
			ln.Close()
			<-done
		}
	}
	t.Cleanup(stop)
	return ln.Addr().String(), stop
}

func sharedServices(t *testing.T, n int) []*meta.Service {
	t.Helper()
	store := memkv.New()
	t.Cleanup(func() { store.Close() })
	var out []*meta.Service
	for range n {
		svc, err := meta.New(store, meta.Options{})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, svc)
	}
	return out
}

// TestManyPicksTheNearest: of a far and a near process (every write of
// the far one's connections waits 300 ms, far beyond a loopback round trip
// even on a busy machine), calls go to the near one whatever the order
// given, and Endpoints reports both with their sites.
func TestManyPicksTheNearest(t *testing.T) {
	svcs := sharedServices(t, 2)
	far, _ := serveInfo(t, svcs[0], metarpc.ClusterInfo{Name: "c", Site: "far"}, 300*time.Millisecond)
	near, _ := serveInfo(t, svcs[1], metarpc.ClusterInfo{Name: "c", Site: "near"}, 0)
	m, err := metarpc.DialMany(context.Background(), []string{far, near}, metarpc.ManyOptions{Cluster: "c", Refresh: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if m.Addr() != near {
		t.Fatalf("calls go to %s, want the near %s (endpoints %+v)", m.Addr(), near, m.Endpoints())
	}
	eps := m.Endpoints()
	if len(eps) != 2 || eps[0].Site != "far" || eps[1].Site != "near" || !eps[1].Current || eps[0].RTT <= eps[1].RTT {
		t.Fatalf("endpoints %+v", eps)
	}
	if _, err := m.GetAttr(context.Background(), meta.RootIno); err != nil {
		t.Fatal(err)
	}
}

// TestManyRefusesAnotherCluster: an address whose process names another
// cluster is not used; with none of the right cluster DialMany fails
// naming it.
func TestManyRefusesAnotherCluster(t *testing.T) {
	svcs := sharedServices(t, 2)
	other, _ := serveInfo(t, svcs[0], metarpc.ClusterInfo{Name: "other"}, 0)
	ours, _ := serveInfo(t, svcs[1], metarpc.ClusterInfo{Name: "ours"}, 0)
	m, err := metarpc.DialMany(context.Background(), []string{other, ours}, metarpc.ManyOptions{Cluster: "ours", Refresh: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if m.Addr() != ours {
		t.Fatalf("calls go to %s, want %s", m.Addr(), ours)
	}
	_, err = metarpc.DialMany(context.Background(), []string{other}, metarpc.ManyOptions{Cluster: "ours", Refresh: -1})
	if err == nil || !strings.Contains(err.Error(), `cluster "other", not "ours"`) {
		t.Fatalf("dial of another cluster's meta only: %v", err)
	}
}

// TestManyFailover: a call that cannot reach the current process goes to
// the other at once; a call whose reply was lost is not resent elsewhere
// (it may have been applied) but says so; with every process gone a call
// is unreachable, and DialMany names every address.
func TestManyFailover(t *testing.T) {
	ctx := context.Background()
	svcs := sharedServices(t, 2)
	blocked := &blocking{API: svcs[0], entered: make(chan struct{}), release: make(chan struct{})}
	a, stopA := serveInfo(t, blocked, metarpc.ClusterInfo{Name: "c"}, 0)
	// b is far (slow writes), so that calls start on a.
	b, stopB := serveInfo(t, svcs[1], metarpc.ClusterInfo{Name: "c"}, 300*time.Millisecond)
	m, err := metarpc.DialMany(ctx, []string{a, b}, metarpc.ManyOptions{Refresh: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if m.Addr() != a {
		t.Fatalf("calls go to %s, want the near %s", m.Addr(), a)
	}
	lost := make(chan error, 1)
	go func() { _, err := m.Lookup(ctx, meta.RootIno, "x"); lost <- err }()
	<-blocked.entered
	stopped := make(chan struct{})
	go func() { stopA(); close(stopped) }() // returns once the held call ends
	err = <-lost
	close(blocked.release)
	<-stopped
	if !errors.Is(err, meta.ErrReplyLost) {
		t.Fatalf("call cut by a's exit: %v, want ErrReplyLost", err)
	}
	if _, err := m.GetAttr(ctx, meta.RootIno); err != nil {
		t.Fatalf("call after a went away: %v", err)
	}
	if m.Addr() != b {
		t.Fatalf("calls go to %s, want %s", m.Addr(), b)
	}
	stopB()
	// The first call may still be sent on b's dying connection (its reply
	// is then lost); the next ones find nothing to connect to.
	for range 3 {
		if _, err = m.GetAttr(ctx, meta.RootIno); !errors.Is(err, meta.ErrReplyLost) {
			break
		}
	}
	if !errors.Is(err, meta.ErrUnreachable) {
		t.Fatalf("call with both gone: %v, want ErrUnreachable", err)
	}
	_, err = metarpc.DialMany(ctx, []string{a, b}, metarpc.ManyOptions{Refresh: -1})
	if !errors.Is(err, meta.ErrUnreachable) || !strings.Contains(err.Error(), a) || !strings.Contains(err.Error(), b) {
		t.Fatalf("dial with both gone: %v", err)
	}
}

type fixedMembers []kv.Member

func (f fixedMembers) Members(context.Context) ([]kv.Member, error) { return f, nil }

// TestClusterStatusIsAdminOnly: Hello answers every role, ClusterStatus
// only admins, with the store's members.
func TestClusterStatusIsAdminOnly(t *testing.T) {
	p := newPKI(t)
	svcs := sharedServices(t, 1)
	members := fixedMembers{{Name: "e1", Addr: "http://127.0.0.1:2379", Leader: true, Healthy: true, Rev: 7}}
	addr, _ := serveOpts(t, svcs[0], metarpc.ServeOptions{Creds: p.server,
		Cluster: metarpc.ClusterInfo{Name: "c", Site: "s1", Members: members}})
	ctx := context.Background()
	for _, role := range auth.Roles {
		c, err := metarpc.Dial(addr, metarpc.DialOptions{Creds: issue(t, p.ca, auth.Request{Name: "x", Role: role, Validity: time.Hour})})
		if err != nil {
			t.Fatal(err)
		}
		h, err := c.Hello(ctx)
		if err != nil || h.Cluster != "c" || h.Site != "s1" {
			t.Errorf("%s: Hello %+v, %v", role, h, err)
		}
		st, err := c.ClusterStatus(ctx)
		switch {
		case role == auth.RoleAdmin && (err != nil || !st.Replicated || len(st.Members) != 1 || st.Members[0] != members[0]):
			t.Errorf("admin: ClusterStatus %+v, %v", st, err)
		case role != auth.RoleAdmin && !errors.Is(err, auth.ErrDenied):
			t.Errorf("%s: ClusterStatus %+v, %v; want refused", role, st, err)
		}
		c.Close()
	}
}

// TestManyReturnsToTheNearest: while the near process is down calls go to
// the far one; once the near one answers again, the next measurement
// (Probe, what the refresh runs) moves calls back to it.
func TestManyReturnsToTheNearest(t *testing.T) {
	ctx := context.Background()
	svcs := sharedServices(t, 2)
	near, stopNear := serveInfo(t, svcs[0], metarpc.ClusterInfo{Name: "c", Site: "near"}, 0)
	stopNear()
	far, _ := serveInfo(t, svcs[1], metarpc.ClusterInfo{Name: "c", Site: "far"}, 300*time.Millisecond)
	m, err := metarpc.DialMany(ctx, []string{near, far}, metarpc.ManyOptions{Refresh: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if m.Addr() != far {
		t.Fatalf("calls go to %s with the near one down, want %s", m.Addr(), far)
	}
	if eps := m.Endpoints(); eps[0].Err == nil || !errors.Is(eps[0].Err, meta.ErrUnreachable) {
		t.Fatalf("the near one while down: %+v", eps[0])
	}
	ln, err := net.Listen("tcp", near)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		done <- metarpc.Serve(ln, svcs[0], metarpc.ServeOptions{Cluster: metarpc.ClusterInfo{Name: "c", Site: "near"}})
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	m.Probe(ctx)
	if m.Addr() != near {
		t.Fatalf("after a probe with the near one back, calls go to %s (endpoints %+v)", m.Addr(), m.Endpoints())
	}
	if _, err := m.GetAttr(ctx, meta.RootIno); err != nil {
		t.Fatal(err)
	}
}

// freezer is a TCP proxy to a meta process that can stop passing bytes
// without closing anything: a process cut off by the network, whose
// connections stay open.
type freezer struct {
	ln     net.Listener
	target string
	frozen chan struct{}
	conns  chan net.Conn // every connection made, closed at cleanup
}

func newFreezer(t *testing.T, target string) *freezer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &freezer{ln: ln, target: target, frozen: make(chan struct{}), conns: make(chan net.Conn, 64)}
	go f.serve()
	t.Cleanup(func() {
		ln.Close()
		for {
			select {
			case c := <-f.conns:
				c.Close()
			default:
				return
			}
		}
	})
	return f
}

func (f *freezer) serve() {
	for {
		in, err := f.ln.Accept()
		if err != nil {
			return
		}
		out, err := net.Dial("tcp", f.target)
		if err != nil {
			in.Close()
			continue
		}
		f.conns <- in
		f.conns <- out
		go f.pipe(in, out)
		go f.pipe(out, in)
	}
}

// pipe copies until the freezer freezes; then it holds what it read.
func (f *freezer) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		select {
		case <-f.frozen:
			<-make(chan struct{}) // blocked until the test's end closes src
		default:
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// TestManyLeavesASilentProcess: a process that stops answering without
// its connection breaking (a network cut) makes a call lose its reply;
// the Hello asked then gets no answer either, so calls move to the other
// process at once, without waiting for keepalive to break the connection.
func TestManyLeavesASilentProcess(t *testing.T) {
	ctx := context.Background()
	svcs := sharedServices(t, 2)
	a, _ := serveInfo(t, svcs[0], metarpc.ClusterInfo{Name: "c"}, 0)
	b, _ := serveInfo(t, svcs[1], metarpc.ClusterInfo{Name: "c"}, 300*time.Millisecond) // far: calls start on a
	fa := newFreezer(t, a)
	m, err := metarpc.DialMany(ctx, []string{fa.ln.Addr().String(), b}, metarpc.ManyOptions{Refresh: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if m.Addr() != fa.ln.Addr().String() {
		t.Fatalf("calls go to %s, want the near %s", m.Addr(), fa.ln.Addr())
	}
	close(fa.frozen)
	cctx, cancel := context.WithTimeout(ctx, time.Second)
	_, err = m.GetAttr(cctx, meta.RootIno)
	cancel()
	if !errors.Is(err, meta.ErrReplyLost) {
		t.Fatalf("call to the silent process: %v, want ErrReplyLost", err)
	}
	if m.Addr() != b {
		t.Fatalf("after a lost reply and an unanswered Hello, calls go to %s, want %s", m.Addr(), b)
	}
	if _, err := m.GetAttr(ctx, meta.RootIno); err != nil {
		t.Fatalf("call after the switch: %v", err)
	}
}
