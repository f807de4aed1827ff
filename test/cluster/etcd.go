package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"tessera/internal/kv/etcdkv"
)

// EtcdOptions describe an Etcd cluster.
type EtcdOptions struct {
	Bin     string // the etcd server binary
	Dir     string // each member's data in Dir/e<i>, its log in Dir/e<i>.log
	Members int    // default 3
}

// Etcd is a cluster of real etcd server processes on loopback, for a
// program (the chaos run) as much as a test: unlike etcdtest it needs no
// testing.TB. Members can be killed with SIGKILL and restarted on the same
// data directory and ports, paused (SIGSTOP) and resumed, and the
// leadership moved. Close ends every member by its process id.
type Etcd struct {
	opts    EtcdOptions
	initial string // --initial-cluster

	mu      sync.Mutex
	members []*etcdProc
}

// etcdProc is one member.
type etcdProc struct {
	name, dir            string
	clientAddr, peerAddr string
	cmd                  *exec.Cmd
	exited               chan struct{}
	paused               bool
}

// StartEtcd starts the members and waits until the cluster answers a
// linearizable read. A member that finds its port taken between the probe
// and the bind makes the whole cluster start again on new ports (a few
// times at most). On error nothing is left running.
func StartEtcd(opts EtcdOptions) (*Etcd, error) {
	if opts.Bin == "" || opts.Dir == "" {
		return nil, errors.New("cluster: etcd: Bin and Dir are required")
	}
	if opts.Members == 0 {
		opts.Members = 3
	}
	for attempt := 1; ; attempt++ {
		e := &Etcd{opts: opts}
		err := e.startOnce(filepath.Join(opts.Dir, fmt.Sprintf("try%d", attempt)))
		if err == nil {
			return e, nil
		}
		taken := e.portTaken()
		e.Close()
		if attempt == 5 || !taken {
			return nil, err
		}
	}
}

func (e *Etcd) startOnce(dir string) error {
	var initial []string
	for i := range e.opts.Members {
		m := &etcdProc{name: fmt.Sprintf("e%d", i), dir: filepath.Join(dir, fmt.Sprintf("e%d", i))}
		var err error
		if m.clientAddr, err = freeAddr(); err != nil {
			return err
		}
		if m.peerAddr, err = freeAddr(); err != nil {
			return err
		}
		e.members = append(e.members, m)
		initial = append(initial, m.name+"=http://"+m.peerAddr)
	}
	e.initial = strings.Join(initial, ",")
	for i := range e.members {
		if err := e.run(i, "new"); err != nil {
			return err
		}
	}
	return e.WaitReady(context.Background())
}

// portTaken reports whether a member exited because its port was taken.
func (e *Etcd) portTaken() bool {
	for _, m := range e.members {
		if m.exited == nil {
			continue
		}
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

func (e *Etcd) run(i int, state string) error {
	m := e.members[i]
	if err := os.MkdirAll(m.dir, 0o700); err != nil {
		return err
	}
	args := append([]string{
		"--name=" + m.name,
		"--data-dir=" + m.dir,
		"--listen-client-urls=http://" + m.clientAddr,
		"--advertise-client-urls=http://" + m.clientAddr,
		"--listen-peer-urls=http://" + m.peerAddr,
		"--initial-advertise-peer-urls=http://" + m.peerAddr,
		"--initial-cluster=" + e.initial,
		"--initial-cluster-state=" + state,
		"--initial-cluster-token=tessera-etcd",
		// A busy 2-core machine must not make members lose their leader
		// by itself: elections should come from the faults.
		"--heartbeat-interval=200",
		"--election-timeout=2000",
	}, etcdkv.ServerFlags...)
	out, err := os.OpenFile(m.dir+".log", os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer out.Close()
	cmd := exec.Command(e.opts.Bin, args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("cluster: start etcd %s: %w", m.name, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	e.mu.Lock()
	m.cmd, m.exited, m.paused = cmd, exited, false
	e.mu.Unlock()
	return nil
}

// Members returns how many members the cluster has.
func (e *Etcd) Members() int { return len(e.members) }

// Endpoints are the members' client URLs.
func (e *Etcd) Endpoints() []string {
	var out []string
	for _, m := range e.members {
		out = append(out, "http://"+m.clientAddr)
	}
	return out
}

// URL is the etcd:// URL of the cluster with a key prefix, as --meta-db
// takes it.
func (e *Etcd) URL(prefix string) string {
	var hosts []string
	for _, m := range e.members {
		hosts = append(hosts, m.clientAddr)
	}
	return "etcd://" + strings.Join(hosts, ",") + "/" + strings.TrimPrefix(prefix, "/")
}

// PID returns member i's process id (0 when it is not running).
func (e *Etcd) PID(i int) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	if m := e.members[i]; m.cmd != nil {
		return m.cmd.Process.Pid
	}
	return 0
}

// WaitReady polls a linearizable read through the running members, for at
// most a minute (or ctx).
func (e *Etcd) WaitReady(ctx context.Context) error {
	var eps []string
	e.mu.Lock()
	for _, m := range e.members {
		if m.cmd != nil {
			eps = append(eps, "http://"+m.clientAddr)
		}
	}
	e.mu.Unlock()
	cli, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return fmt.Errorf("cluster: etcd client: %w", err)
	}
	defer cli.Close()
	var last error
	for range 240 {
		e.mu.Lock()
		var dead *etcdProc
		for _, m := range e.members {
			if m.cmd == nil {
				continue
			}
			select {
			case <-m.exited:
				dead = m
			default:
			}
		}
		e.mu.Unlock()
		if dead != nil {
			return fmt.Errorf("cluster: etcd %s exited (its log: %s.log)", dead.name, dead.dir)
		}
		c, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, last = cli.Get(c, "etcd-ready")
		cancel()
		if last == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		time.Sleep(250 * time.Millisecond)
	}
	return fmt.Errorf("cluster: etcd not ready: %v (the members' logs: %s.log)", last, e.members[0].dir)
}
