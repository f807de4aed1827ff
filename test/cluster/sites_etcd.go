package cluster

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"tessera/internal/kv/etcdkv"
	"tessera/internal/wan"
)

// etcdPeerLatency is the one-way delay of every etcd peer link. A member
// advertises one peer URL to all others, so a link cannot know which site
// dials it: each member gets one link in front of its peer port, and every
// pair of members sees the same round trip: the largest over the sites of
// the RTT to the nearest other site. With three sites a Raft leader needs
// one follower, so that is what a commit costs from the worst-placed
// leader; for the rNFS Figure 6 matrix it is 60 ms from every site (A is
// 60 ms from both B and C), exactly what per-pair links would give; only
// B-C traffic is faster than its 120 ms.
func etcdPeerLatency(rtt [][]time.Duration) time.Duration {
	var worst time.Duration
	for i := range rtt {
		nearest := time.Duration(-1)
		for j, d := range rtt[i] {
			if j != i && (nearest < 0 || d < nearest) {
				nearest = d
			}
		}
		worst = max(worst, nearest)
	}
	return worst / 2
}

// etcdMember is one etcd server process of a Sites cluster.
type etcdMember struct {
	name, dir  string
	clientAddr string    // where the site's meta connects (no WAN: same site)
	peerAddr   string    // the member's own peer listener
	peer       *wan.Link // in front of peerAddr: the URL the others dial
	cmd        *exec.Cmd
	exited     chan struct{}
	stopped    bool // SIGSTOPped by a partition
}

// freeAddr returns a 127.0.0.1 address with a port nobody listens on now.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("cluster: free port: %w", err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// startEtcd starts one member per site, peers through links, and waits
// until the cluster answers a linearizable read. freeAddr's ports are free
// when it looks; another process (a test package running beside this one,
// an outgoing connection's ephemeral port) may take one before its member
// binds it: then the members are stopped and started again on new ports,
// a few times at most.
func (s *Sites) startEtcd() error {
	for attempt := 1; ; attempt++ {
		err := s.startEtcdOnce()
		if err == nil || attempt == 5 || !s.etcdPortTaken() {
			return err
		}
		s.stopEtcd()
		for _, m := range s.etcd {
			if err := os.RemoveAll(m.dir); err != nil {
				return err
			}
			os.Remove(m.dir + ".log") // its lines are this attempt's
		}
		s.etcd = nil
	}
}

// etcdPortTaken reports whether a member exited because its port was taken.
func (s *Sites) etcdPortTaken() bool {
	for _, m := range s.etcd {
		select {
		case <-m.exited:
			b, _ := os.ReadFile(m.dir + ".log")
			if bytes.Contains(b, []byte("address already in use")) {
				return true
			}
		default:
		}
	}
	return false
}

func (s *Sites) startEtcdOnce() error {
	var initial []string
	oneWay := etcdPeerLatency(s.opts.RTT)
	if s.opts.EtcdNoWAN {
		oneWay = 0
	}
	for i, name := range s.opts.Sites {
		m := &etcdMember{name: name, dir: filepath.Join(s.opts.Dir, "etcd-"+name)}
		var err error
		if m.clientAddr, err = freeAddr(); err != nil {
			return err
		}
		if m.peerAddr, err = freeAddr(); err != nil {
			return err
		}
		if m.peer, err = wan.NewLink(m.peerAddr, wan.LinkOptions{
			Listen: fmt.Sprintf("127.0.0.%d:0", 10+i), Latency: oneWay, Name: "etcd peer " + name,
		}); err != nil {
			return err
		}
		s.etcd = append(s.etcd, m)
		initial = append(initial, name+"=http://"+m.peer.Addr())
	}
	for _, m := range s.etcd {
		if err := s.runEtcd(m, strings.Join(initial, ",")); err != nil {
			return err
		}
	}
	return s.waitEtcd()
}

func (s *Sites) runEtcd(m *etcdMember, initial string) error {
	if err := os.MkdirAll(m.dir, 0o700); err != nil {
		return err
	}
	args := append([]string{
		"--name=" + m.name,
		"--data-dir=" + m.dir,
		"--listen-client-urls=http://" + m.clientAddr,
		"--advertise-client-urls=http://" + m.clientAddr,
		"--listen-peer-urls=http://" + m.peerAddr,
		"--initial-advertise-peer-urls=http://" + m.peer.Addr(),
		"--initial-cluster=" + initial,
		"--initial-cluster-state=new",
		"--initial-cluster-token=tessera-sites",
		// 60 ms between members and a busy machine: keep leaders.
		"--heartbeat-interval=300",
		"--election-timeout=3000",
	}, etcdkv.ServerFlags...)
	// etcd logs every slow request: to its own file, not the cluster's log.
	out, err := os.OpenFile(m.dir+".log", os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer out.Close()
	cmd := exec.Command(s.opts.EtcdBin, args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("cluster: start etcd %s: %w", m.name, err)
	}
	m.cmd, m.exited = cmd, make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(m.exited)
	}()
	return nil
}

// waitEtcd polls a linearizable read through every member (bounded: a
// cluster that never forms is an error with the log's tail).
func (s *Sites) waitEtcd() error {
	var eps []string
	for _, m := range s.etcd {
		eps = append(eps, "http://"+m.clientAddr)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return fmt.Errorf("cluster: etcd client: %w", err)
	}
	defer cli.Close()
	var last error
	for range 240 {
		for _, m := range s.etcd {
			select {
			case <-m.exited:
				return fmt.Errorf("cluster: etcd %s exited before the cluster formed (its log: %s.log)", m.name, m.dir)
			default:
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, last = cli.Get(ctx, "sites-ready")
		cancel()
		if last == nil {
			return nil
		}
		time.Sleep(250 * time.Millisecond)
	}
	return fmt.Errorf("cluster: etcd not ready: %v (the members' logs: %s/etcd-*.log)", last, s.opts.Dir)
}

// stopEtcd ends every member by its process id (SIGCONT first for one a
// partition stopped), SIGKILL after 10 s.
func (s *Sites) stopEtcd() {
	for _, m := range s.etcd {
		if m.cmd != nil {
			if m.stopped {
				_ = m.cmd.Process.Signal(syscall.SIGCONT)
			}
			_ = m.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-m.exited:
			case <-time.After(10 * time.Second):
				_ = m.cmd.Process.Signal(syscall.SIGKILL)
				<-m.exited
			}
		}
		if m.peer != nil {
			m.peer.Close()
		}
	}
}
