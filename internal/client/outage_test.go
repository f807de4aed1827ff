package client

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"syscall"
	"testing"
	"time"

	"tessera/internal/block"
	"tessera/internal/kv"
	"tessera/internal/kv/memkv"
	"tessera/internal/meta"
	"tessera/internal/meta/metarpc"
)

// rpcMeta is a meta service over a memkv store served on loopback, which a
// test stops (an outage) and starts again on the same address with a new
// Service over the same store (a restart: the sessions are gone).
type rpcMeta struct {
	t     *testing.T
	store kv.Store
	addr  string
	svc   *meta.Service
	ln    net.Listener
	done  chan error
}

// sessionTTL is short so that a client drops its leases soon into an outage.
const sessionTTL = 600 * time.Millisecond

func newRPCMeta(t *testing.T) *rpcMeta {
	m := &rpcMeta{t: t, store: memkv.New(), addr: "127.0.0.1:0"}
	m.start()
	m.addr = m.ln.Addr().String()
	if _, err := m.svc.RegisterServer(context.Background(), meta.Server{ID: "b0", Addr: "mem", State: "up"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.stop() })
	return m
}

func (m *rpcMeta) start() {
	m.t.Helper()
	svc, err := meta.New(m.store, meta.Options{SessionTTL: sessionTTL})
	if err != nil {
		m.t.Fatal(err)
	}
	ln, err := net.Listen("tcp", m.addr)
	if err != nil {
		m.t.Fatalf("listen again on %s: %v", m.addr, err)
	}
	m.svc, m.ln, m.done = svc, ln, make(chan error, 1)
	go func() { m.done <- metarpc.Serve(ln, svc, metarpc.ServeOptions{}) }()
}

func (m *rpcMeta) stop() {
	if m.ln != nil {
		m.ln.Close()
		<-m.done
		m.ln = nil
	}
}

func (m *rpcMeta) client(t *testing.T, timeout time.Duration, st *memStore) *Client {
	t.Helper()
	mc, err := metarpc.Dial(m.addr, metarpc.DialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(context.Background(), Config{
		Meta:          mc,
		Dial:          func(meta.Server) (block.Store, error) { return st, nil },
		Logger:        slog.New(slog.DiscardHandler),
		MemCacheBytes: 1 << 20,
		Sessions:      true,
		MetaTimeout:   timeout,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c.Close(ctx)
		mc.Close()
	})
	return c
}

// waitUnleased waits (bounded) until the client noticed the outage and
// dropped the leases its session may have lost.
func waitUnleased(t *testing.T, c *Client) {
	t.Helper()
	for i := 0; c.sessionLeased(); i++ {
		if i == 1000 {
			t.Fatal("the client never noticed the meta service was gone")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Past two thirds of the TTL the client stops trusting its leases
	// whatever it noticed (callbacks.run).
	time.Sleep(sessionTTL)
}

// TestOutageServesCachedReadsWherePolicyAllows: with the meta service gone,
// an open file under a timed-cache policy (session) is still read from
// what the client cached; one under a coherent policy (posix) needs the
// service and fails with EIO once the (here tiny) timeout has passed.
// Before, both failed with EIO.
func TestOutageServesCachedReadsWherePolicyAllows(t *testing.T) {
	ctx := context.Background()
	m := newRPCMeta(t)
	st := &memStore{blocks: make(map[block.Hash][]byte)}
	c := m.client(t, time.Millisecond, st)
	want := bytes.Repeat([]byte("cached! "), 1000)
	handles := map[string]*Handle{}
	for _, pol := range []string{"session", "posix"} {
		in := createFile(t, c.Meta(), pol)
		if err := c.Meta().SetXattr(ctx, in.Ino, meta.PolicyXattr, []byte(pol), 0); err != nil {
			t.Fatal(err)
		}
		writeAt(t, c, in.Ino, 0, want)
		h, _, _, err := c.OpenIno(ctx, in.Ino, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer h.Release(ctx)
		if got := readAt(t, h, len(want)); !bytes.Equal(got, want) {
			t.Fatalf("%s: read %d bytes before the outage, differ", pol, len(got))
		}
		handles[pol] = h
	}
	m.stop()
	waitUnleased(t, c)

	buf := make([]byte, len(want))
	n, err := handles["session"].Read(ctx, 0, buf)
	if err != nil || !bytes.Equal(buf[:n], want) {
		t.Fatalf("session read during the outage: %d bytes, %v; want the cached %d bytes", n, err, len(want))
	}
	if _, err := handles["posix"].Read(ctx, 0, buf); !errors.Is(err, syscall.EIO) {
		t.Fatalf("posix read during an outage past the timeout: %v, want EIO", err)
	}
}

// TestOutageRestartIsInvisible: the meta service stops and comes back
// (a new process: every session gone) while a file is open with
// uncommitted writes; a stat and a close made during the outage wait and
// succeed, the client's session is replaced (the reopen hooks run), and
// the data is committed. Before, both failed with EIO at once.
func TestOutageRestartIsInvisible(t *testing.T) {
	ctx := context.Background()
	m := newRPCMeta(t)
	st := &memStore{blocks: make(map[block.Hash][]byte)}
	c := m.client(t, -1, st)
	reopened := make(chan meta.SessionID, 10)
	c.onSessionReopened(func(ctx context.Context, bound meta.API) error {
		reopened <- c.Session()
		return nil
	})
	in := createFile(t, c.Meta(), "f")
	h, _, _, err := c.OpenIno(ctx, in.Ino, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Write(ctx, 0, []byte("before ")); err != nil {
		t.Fatal(err)
	}
	old := c.Session()
	m.stop()
	waitUnleased(t, c)

	stat := make(chan error, 1)
	go func() { _, err := c.Meta().GetAttr(ctx, in.Ino); stat <- err }()
	closed := make(chan error, 1)
	go func() {
		if _, err := h.Write(ctx, 7, []byte("during")); err != nil {
			closed <- err
			return
		}
		closed <- h.Release(ctx) // commits: waits for the service
	}()
	select {
	case err := <-stat:
		t.Fatalf("stat returned %v with the meta service down", err)
	case err := <-closed:
		t.Fatalf("close returned %v with the meta service down", err)
	case <-time.After(200 * time.Millisecond):
	}
	m.start() // same address, same store, no sessions
	if err := <-stat; err != nil {
		t.Fatalf("stat across the restart: %v", err)
	}
	if err := <-closed; err != nil {
		t.Fatalf("write and close across the restart: %v", err)
	}
	select {
	case id := <-reopened:
		if id == old || id == 0 {
			t.Fatalf("session %x after the restart, was %x", id, old)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the session was not reopened after the restart")
	}
	got, err := m.svc.GetAttr(ctx, in.Ino)
	if err != nil || got.Size != uint64(len("before during")) {
		t.Fatalf("after the restart the file is %+v, %v; want %d bytes", got.Attr, err, len("before during"))
	}
	h2, _, _, err := c.OpenIno(ctx, in.Ino, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer h2.Release(ctx)
	if b := readAt(t, h2, 100); string(b) != "before during" {
		t.Fatalf("read back %q", b)
	}
}
