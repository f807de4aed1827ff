package etcdtest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// StartPartitionable is Start (plain HTTP) with every member's peer
// traffic through a proxy of the test's, so that Isolate can cut one
// member off from the others while its clients still reach it: a member
// that lags the cluster for as long as the test wants, and answers
// serializable reads from its old state.
func StartPartitionable(t testing.TB, n int) *Cluster {
	t.Helper()
	return start(t, n, false, true)
}

// Isolate cuts member i off from its peers, both ways: its peer
// connections close and new ones are refused until Heal. Its clients
// still reach it.
func (c *Cluster) Isolate(i int) {
	c.t.Helper()
	if c.peers == nil {
		c.t.Fatal("etcdtest: Isolate needs a cluster from StartPartitionable")
	}
	c.peers.learnIDs(c)
	c.peers.isolate(c.Members[i].Name, true)
}

// Heal lets an isolated member i reach its peers again.
func (c *Cluster) Heal(i int) {
	c.t.Helper()
	if c.peers == nil {
		c.t.Fatal("etcdtest: Heal needs a cluster from StartPartitionable")
	}
	c.peers.isolate(c.Members[i].Name, false)
}

// peerNet is the proxies in front of the members' peer ports. etcd's peer
// requests (raft streams, which carry messages toward the member that
// dialed, and pipelines) name their sender in an X-Server-From header
// (its member ID in hex), so one proxy per member tells which pair of
// members a connection joins.
type peerNet struct {
	t  testing.TB
	mu struct {
		sync.Mutex
		closed   bool
		isolated map[string]bool       // member names
		names    map[string]string     // member ID (hex) -> name
		conns    map[*proxied]struct{} // open connections
		ls       []net.Listener
	}
	wg sync.WaitGroup
}

// proxied is one connection through a proxy: from the member with ID
// fromID ("" when the request names none) to member to.
type proxied struct {
	to, fromID   string
	client, dest net.Conn
}

func newPeerNet(t testing.TB) *peerNet {
	p := &peerNet{t: t}
	p.mu.isolated = make(map[string]bool)
	p.mu.names = make(map[string]string)
	p.mu.conns = make(map[*proxied]struct{})
	t.Cleanup(p.close)
	return p
}

// proxy starts the proxy of member m (m.peerListen is where m listens)
// and returns its URL.
func (p *peerNet) proxy(m *Member) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		p.t.Fatalf("etcdtest: peer proxy: %v", err)
	}
	p.mu.Lock()
	p.mu.ls = append(p.mu.ls, l)
	p.mu.Unlock()
	dest := strings.TrimPrefix(m.peerListen, "http://")
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				p.serve(m.Name, dest, conn)
			}()
		}
	}()
	return "http://" + l.Addr().String()
}

// serve reads the first request's header to learn the sender, then copies
// the connection's bytes, that header included, both ways.
func (p *peerNet) serve(to, dest string, client net.Conn) {
	var head bytes.Buffer
	_ = client.SetReadDeadline(time.Now().Add(10 * time.Second))
	req, err := http.ReadRequest(bufio.NewReader(io.TeeReader(client, &head)))
	_ = client.SetReadDeadline(time.Time{})
	if err != nil {
		client.Close()
		return
	}
	pc := &proxied{to: to, fromID: req.Header.Get("X-Server-From"), client: client}
	if !p.admit(pc) {
		client.Close()
		return
	}
	d, err := net.DialTimeout("tcp", dest, 5*time.Second)
	if err != nil {
		p.drop(pc)
		return
	}
	p.mu.Lock()
	pc.dest = d
	cut := p.mu.closed || p.cutLocked(pc)
	p.mu.Unlock()
	if cut {
		p.drop(pc)
		return
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(client, d)
		p.drop(pc)
	}()
	if _, err := d.Write(head.Bytes()); err == nil {
		_, _ = io.Copy(d, client)
	}
	p.drop(pc)
	<-done
}

// admit records pc unless its pair is cut.
func (p *peerNet) admit(pc *proxied) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.closed || p.cutLocked(pc) {
		return false
	}
	p.mu.conns[pc] = struct{}{}
	return true
}

func (p *peerNet) cutLocked(pc *proxied) bool {
	return p.mu.isolated[pc.to] || p.mu.isolated[p.mu.names[pc.fromID]]
}

// drop closes both ends of pc and forgets it.
func (p *peerNet) drop(pc *proxied) {
	p.mu.Lock()
	delete(p.mu.conns, pc)
	d := pc.dest
	p.mu.Unlock()
	pc.client.Close()
	if d != nil {
		d.Close()
	}
}

func (p *peerNet) isolate(name string, on bool) {
	p.mu.Lock()
	if on {
		p.mu.isolated[name] = true
	} else {
		delete(p.mu.isolated, name)
	}
	var cut []*proxied
	for pc := range p.mu.conns {
		if p.cutLocked(pc) {
			cut = append(cut, pc)
		}
	}
	p.mu.Unlock()
	for _, pc := range cut {
		p.drop(pc)
	}
}

// learnIDs maps the members' IDs to their names (once).
func (p *peerNet) learnIDs(c *Cluster) {
	p.mu.Lock()
	known := len(p.mu.names) == len(c.Members)
	p.mu.Unlock()
	if known {
		return
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		c.t.Fatalf("etcdtest: client: %v", err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cli.MemberList(ctx)
	if err != nil {
		c.t.Fatalf("etcdtest: member list: %v", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, m := range resp.Members {
		p.mu.names[fmt.Sprintf("%x", m.ID)] = m.Name
	}
}

// close stops the proxies and closes their connections.
func (p *peerNet) close() {
	p.mu.Lock()
	if p.mu.closed {
		p.mu.Unlock()
		return
	}
	p.mu.closed = true
	ls := p.mu.ls
	var open []*proxied
	for pc := range p.mu.conns {
		open = append(open, pc)
	}
	p.mu.Unlock()
	for _, l := range ls {
		l.Close()
	}
	for _, pc := range open {
		p.drop(pc)
	}
	p.wg.Wait()
}
