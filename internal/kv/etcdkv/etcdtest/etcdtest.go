// Package etcdtest starts clusters of the real etcd server binary for tests:
// one or three members on 127.0.0.1, on free ports, in temporary
// directories, with the limit flags of etcdkv.ServerFlags; StartTLS makes
// them speak TLS only, to clients and to each other, and require client
// certificates of its own CA (made with package auth). Members are
// stopped by their process id when the test ends, and a test can kill one
// with SIGKILL and restart it on the same data directory, or freeze it
// with SIGSTOP. StartPartitionable puts a proxy in front of each member's
// peer port (partition.go): Isolate cuts a member off from its peers while
// its clients still reach it (a member that lags), Heal ends that.
//
// The binary is `etcd` on PATH (or $TESSERA_ETCD). scripts/test.sh
// installs it (Debian's etcd-server) when missing; a test without it fails
// when CI=true and is skipped otherwise.
package etcdtest

import (
	"cmp"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"tessera/internal/kv/etcdkv"
)

// Binary returns the path of the etcd server, or ends the test: Fatal
// under CI=true, Skip otherwise.
func Binary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("TESSERA_ETCD"); p != "" {
		return p
	}
	p, err := exec.LookPath("etcd")
	if err == nil {
		return p
	}
	msg := "the etcd server binary is not installed (scripts/test.sh installs it: apt-get install -y etcd-server)"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// Member is one etcd server process.
type Member struct {
	Name      string
	Dir       string
	ClientURL string
	PeerURL   string // what the others dial: a proxy's in a partitionable cluster
	// peerListen is where the member listens for its peers ("": PeerURL).
	peerListen string
	cmd        *exec.Cmd
	exited     chan struct{}
	stopped    bool // SIGSTOPped by Stop
}

// Cluster is a running etcd cluster.
type Cluster struct {
	t       testing.TB
	bin     string
	initial string // --initial-cluster
	Members []*Member
	PKI     *PKI     // nil: plain HTTP
	peers   *peerNet // nil: members dial each other directly
	// member certificate files (TLS only)
	certFile, keyFile string
}

// Start starts an n-member cluster and waits until it answers a
// linearizable read. Its members stop when the test ends.
func Start(t testing.TB, n int) *Cluster {
	t.Helper()
	return start(t, n, false, false)
}

// StartTLS is Start with TLS between everyone and client certificates
// required (c.PKI).
func StartTLS(t testing.TB, n int) *Cluster {
	t.Helper()
	return start(t, n, true, false)
}

func start(t testing.TB, n int, withTLS, partitionable bool) *Cluster {
	t.Helper()
	c := &Cluster{t: t, bin: Binary(t)}
	root := t.TempDir()
	scheme := "http://"
	if withTLS {
		scheme = "https://"
		c.PKI = newPKI(t, filepath.Join(root, "pki"))
		c.certFile, c.keyFile = c.PKI.issue(t, "etcd-member")
	}
	t.Cleanup(c.stopAll)
	for attempt := 1; ; attempt++ {
		var initial []string
		c.Members = nil
		pick := distinctAddrs(t)
		if partitionable {
			c.peers = newPeerNet(t)
		}
		for i := range n {
			m := &Member{
				Name:      fmt.Sprintf("m%d", i),
				Dir:       filepath.Join(root, fmt.Sprintf("try%d", attempt), fmt.Sprintf("m%d", i)),
				ClientURL: scheme + pick(),
				PeerURL:   scheme + pick(),
			}
			if c.peers != nil {
				m.peerListen = m.PeerURL
				m.PeerURL = c.peers.proxy(m)
			}
			c.Members = append(c.Members, m)
			initial = append(initial, m.Name+"="+m.PeerURL)
		}
		c.initial = strings.Join(initial, ",")
		for i := range c.Members {
			c.start(i)
		}
		err := c.waitReady()
		if err == nil {
			return c
		}
		// freeAddr's port is free when it looks; another process (a
		// test running beside this one, an outgoing connection's
		// ephemeral port) may take it before the member binds it.
		if attempt >= maxStartAttempts || !c.portTaken() {
			t.Fatal(err)
		}
		c.stopAll()
		if c.peers != nil {
			c.peers.close()
		}
	}
}

// maxStartAttempts bounds how many times start picks new ports for a
// cluster whose member found its port taken.
const maxStartAttempts = 5

// portTaken reports whether a member exited because its port was taken.
func (c *Cluster) portTaken() bool {
	for _, m := range c.Members {
		select {
		case <-m.exited:
			if strings.Contains(c.logTail(m), "address already in use") {
				return true
			}
		default:
		}
	}
	return false
}

// distinctAddrs returns a picker of free addresses that never hands out
// one twice: the kernel may give a just-closed port back to the next
// net.Listen, and two members on one URL make etcd refuse the cluster
// ("has duplicate url"; a CI run failed so).
func distinctAddrs(t testing.TB) func() string {
	seen := map[string]bool{}
	return func() string {
		t.Helper()
		for range maxPickTries {
			a := freeAddr(t)
			if !seen[a] {
				seen[a] = true
				return a
			}
		}
		t.Fatalf("etcdtest: no distinct free port after %d tries", maxPickTries)
		return ""
	}
}

// maxPickTries bounds how often distinctAddrs asks for another port.
const maxPickTries = 100

// freeAddr returns a 127.0.0.1 address with a port nobody listens on now
// (a variable: a test makes it hand out a taken one).
var freeAddr = func(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("etcdtest: free port: %v", err)
	}
	defer l.Close()
	return l.Addr().String()
}

func (c *Cluster) start(i int) {
	c.t.Helper()
	m := c.Members[i]
	if err := os.MkdirAll(m.Dir, 0o700); err != nil {
		c.t.Fatalf("etcdtest: %v", err)
	}
	log, err := os.OpenFile(m.Dir+".log", os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		c.t.Fatalf("etcdtest: %v", err)
	}
	args := []string{
		"--name=" + m.Name,
		"--data-dir=" + m.Dir,
		"--listen-client-urls=" + m.ClientURL,
		"--advertise-client-urls=" + m.ClientURL,
		"--listen-peer-urls=" + cmp.Or(m.peerListen, m.PeerURL),
		"--initial-advertise-peer-urls=" + m.PeerURL,
		"--initial-cluster=" + c.initial,
		"--initial-cluster-state=new",
		"--initial-cluster-token=tessera-test",
		// A busy test machine must not make members lose their leader.
		"--heartbeat-interval=200",
		"--election-timeout=2000",
	}
	if c.PKI != nil {
		args = append(args,
			"--cert-file="+c.certFile, "--key-file="+c.keyFile,
			"--trusted-ca-file="+c.PKI.CAFile, "--client-cert-auth",
			"--peer-cert-file="+c.certFile, "--peer-key-file="+c.keyFile,
			"--peer-trusted-ca-file="+c.PKI.CAFile, "--peer-client-cert-auth")
	}
	args = append(args, etcdkv.ServerFlags...)
	cmd := exec.Command(c.bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		log.Close()
		c.t.Fatalf("etcdtest: start %s: %v", m.Name, err)
	}
	log.Close()
	m.cmd = cmd
	m.exited = make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(m.exited)
	}()
}

// Endpoints are the client URLs of all members.
func (c *Cluster) Endpoints() []string {
	var out []string
	for _, m := range c.Members {
		out = append(out, m.ClientURL)
	}
	return out
}

// URL is the etcd:// URL of the cluster with the given key prefix, as
// --meta-db takes it (with the client certificate's files for TLS).
func (c *Cluster) URL(prefix string) string {
	var hosts []string
	for _, m := range c.Members {
		_, host, _ := strings.Cut(m.ClientURL, "://")
		hosts = append(hosts, host)
	}
	u := "etcd://" + strings.Join(hosts, ",") + "/" + strings.TrimPrefix(prefix, "/")
	if c.PKI != nil {
		u += "?ca=" + c.PKI.CAFile + "&cert=" + c.PKI.CertFile + "&key=" + c.PKI.KeyFile
	}
	return u
}

// TLS is the client TLS configuration (nil for plain HTTP).
func (c *Cluster) TLS() *tls.Config {
	if c.PKI == nil {
		return nil
	}
	return c.PKI.ClientTLS(c.t)
}

// WaitReady waits until a majority answers a linearizable read through the
// live members (bounded: a cluster that never forms fails the test with
// its members' logs).
func (c *Cluster) WaitReady() {
	c.t.Helper()
	if err := c.waitReady(); err != nil {
		c.t.Fatal(err)
	}
}

func (c *Cluster) waitReady() error {
	var live []string
	for _, m := range c.Members {
		if m.cmd != nil {
			live = append(live, m.ClientURL)
		}
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: live, DialTimeout: 5 * time.Second, Logger: zap.NewNop(), TLS: c.TLS()})
	if err != nil {
		return fmt.Errorf("etcdtest: client: %w", err)
	}
	defer cli.Close()
	var last error
	for range 240 {
		for _, m := range c.Members {
			if m.cmd == nil {
				continue
			}
			select {
			case <-m.exited:
				return fmt.Errorf("etcdtest: member %s exited: %s", m.Name, c.logTail(m))
			default:
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, last = cli.Get(ctx, "etcdtest-ready")
		cancel()
		if last == nil {
			return nil
		}
		time.Sleep(250 * time.Millisecond)
	}
	return fmt.Errorf("etcdtest: cluster not ready: %v\n%s", last, c.logTail(c.Members[0]))
}

func (c *Cluster) logTail(m *Member) string {
	b, _ := os.ReadFile(m.Dir + ".log")
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// Kill stops member i with SIGKILL and waits for it to exit.
func (c *Cluster) Kill(i int) {
	c.t.Helper()
	m := c.Members[i]
	if m.cmd == nil {
		return
	}
	_ = m.cmd.Process.Signal(syscall.SIGKILL)
	<-m.exited
	m.cmd, m.stopped = nil, false
}

// Stop freezes member i with SIGSTOP: its connections stay open and
// nothing answers on them, as with a member cut off by a partition that
// leaves its sockets alone. Continue resumes it; the test's end does too.
func (c *Cluster) Stop(i int) {
	c.t.Helper()
	m := c.Members[i]
	if m.cmd == nil || m.stopped {
		return
	}
	if err := m.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		c.t.Fatalf("etcdtest: stop %s: %v", m.Name, err)
	}
	m.stopped = true
}

// Continue resumes a member frozen by Stop.
func (c *Cluster) Continue(i int) {
	c.t.Helper()
	m := c.Members[i]
	if m.cmd == nil || !m.stopped {
		return
	}
	if err := m.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		c.t.Fatalf("etcdtest: continue %s: %v", m.Name, err)
	}
	m.stopped = false
}

// Restart starts a killed member again on its data directory and waits
// until the cluster answers.
func (c *Cluster) Restart(i int) {
	c.t.Helper()
	c.RestartAll(i)
}

// RestartAll starts the given members again on their data directories,
// all before it waits until the cluster answers: a majority may need
// several of them.
func (c *Cluster) RestartAll(members ...int) {
	c.t.Helper()
	for _, i := range members {
		c.Kill(i)
		c.start(i)
	}
	c.WaitReady()
}

// stopAll ends every member still running, by its process id.
func (c *Cluster) stopAll() {
	for _, m := range c.Members {
		if m.cmd == nil {
			continue
		}
		if m.stopped {
			_ = m.cmd.Process.Signal(syscall.SIGCONT)
			m.stopped = false
		}
		_ = m.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-m.exited:
		case <-time.After(10 * time.Second):
			_ = m.cmd.Process.Signal(syscall.SIGKILL)
			<-m.exited
		}
		m.cmd = nil
	}
}

// Leader returns the index of the member that leads now (-1: none found).
func (c *Cluster) Leader() int {
	c.t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop(), TLS: c.TLS()})
	if err != nil {
		c.t.Fatalf("etcdtest: client: %v", err)
	}
	defer cli.Close()
	for i, m := range c.Members {
		if m.cmd == nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		st, err := cli.Status(ctx, m.ClientURL)
		cancel()
		if err == nil && st.Leader == st.Header.MemberId {
			return i
		}
	}
	return -1
}
