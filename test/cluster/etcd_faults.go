package cluster

import (
	"context"
	"fmt"
	"syscall"
	"time"
)

// Kill9 kills member i with SIGKILL and waits for it to exit.
func (e *Etcd) Kill9(i int) error {
	e.mu.Lock()
	m := e.members[i]
	cmd, exited := m.cmd, m.exited
	m.cmd, m.paused = nil, false
	e.mu.Unlock()
	if cmd == nil {
		return nil
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-exited:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("cluster: etcd %s (pid %d) did not die on SIGKILL within 10s", m.name, cmd.Process.Pid)
	}
}

// Restart starts member i again (after Kill9) on its data directory and
// ports, and waits until the cluster answers a linearizable read.
func (e *Etcd) Restart(ctx context.Context, i int) error {
	e.mu.Lock()
	running := e.members[i].cmd != nil
	e.mu.Unlock()
	if running {
		return fmt.Errorf("cluster: etcd %s is running", e.members[i].name)
	}
	if err := e.run(i, "existing"); err != nil {
		return err
	}
	return e.WaitReady(ctx)
}

// Pause freezes member i with SIGSTOP: its connections stay open and
// nothing answers on them. Resume (or Close) continues it.
func (e *Etcd) Pause(i int) error { return e.signal(i, syscall.SIGSTOP, true) }

// Resume continues member i after Pause.
func (e *Etcd) Resume(i int) error { return e.signal(i, syscall.SIGCONT, false) }

func (e *Etcd) signal(i int, sig syscall.Signal, paused bool) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	m := e.members[i]
	if m.cmd == nil {
		return fmt.Errorf("cluster: etcd %s is not running", m.name)
	}
	if err := m.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("cluster: etcd %s: %v: %w", m.name, sig, err)
	}
	m.paused = paused
	return nil
}

// status asks every running member for its id and whether it leads.
func (e *Etcd) status(ctx context.Context) (ids []uint64, leader int) {
	return etcdStatus(ctx, e.upAddrs(), 3*time.Second)
}

// upAddrs is the client address of each member, "" for one stopped or
// paused.
func (e *Etcd) upAddrs() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	addrs := make([]string, len(e.members))
	for i, m := range e.members {
		if m.cmd != nil && !m.paused {
			addrs[i] = m.clientAddr
		}
	}
	return addrs
}

// Leader returns the index of the member that says it leads, -1 if none.
func (e *Etcd) Leader(ctx context.Context) int {
	_, l := e.status(ctx)
	return l
}

// MoveLeader makes member i the leader (etcd's MoveLeader through the
// current leader, as `etcdctl move-leader` does) and waits until it says
// it leads: at most ten tries a second apart.
func (e *Etcd) MoveLeader(ctx context.Context, i int) error {
	if err := moveEtcdLeader(ctx, i, e.upAddrs, 3*time.Second); err != nil {
		return fmt.Errorf("cluster: could not make etcd e%d the leader: %w", i, err)
	}
	return nil
}

// Close ends every member by its process id: SIGCONT for a paused one,
// SIGTERM, SIGKILL after 10 s. It may be called more than once.
func (e *Etcd) Close() {
	e.mu.Lock()
	ms := e.members
	e.mu.Unlock()
	for _, m := range ms {
		e.mu.Lock()
		cmd, exited, paused := m.cmd, m.exited, m.paused
		m.cmd, m.paused = nil, false
		e.mu.Unlock()
		if cmd == nil {
			continue
		}
		if paused {
			_ = cmd.Process.Signal(syscall.SIGCONT)
		}
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Signal(syscall.SIGKILL)
			<-exited
		}
	}
}
