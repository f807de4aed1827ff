package cluster

import (
	"errors"
	"fmt"
	"syscall"
	"time"

	"tessera/internal/wan"
)

// Isolate cuts site i off from a majority while its own etcd member keeps
// running, as a real partition leaves the minority: every WAN link into
// and out of site i refuses connections (and closes open ones), and the
// OTHER sites' etcd members are stopped (SIGSTOP) behind refusing peer
// links. Site i's member then answers serializable reads from what it
// holds, and refuses linearizable reads and commits for want of a leader;
// its meta, block servers and mounts run on.
//
// How it differs from a real partition: the majority does not go on
// meanwhile. One advertised peer URL per member lets no link tell which
// member dials it, so no set of links separates site i's member from the
// others while leaving those two connected; stopping them is the only cut
// this harness can make. The other sites' metas and mounts keep running
// against a member that answers nothing, so writes at the other sites hang
// (until their own majority wait) instead of succeeding: a test that wants
// the majority to go on uses Partition. Rejoin undoes Isolate.
func (s *Sites) Isolate(i int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.isolated != 0 {
		return fmt.Errorf("cluster: site %d is isolated already", s.isolated-1)
	}
	fmt.Fprintf(s.log, "=== sites: isolate %s at %s\n", s.opts.Sites[i], time.Now().Format(logTime))
	if err := s.mesh.Partition(i, wan.Refuse); err != nil {
		return err
	}
	s.isolated = i + 1
	for j, m := range s.etcd {
		if err := m.peer.Cut(wan.Refuse); err != nil {
			return err
		}
		if j == i || m.stopped {
			continue
		}
		if err := m.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
			return fmt.Errorf("cluster: stop etcd %s: %w", m.name, err)
		}
		m.stopped = true
	}
	return nil
}

// Rejoin undoes Isolate(i): the stopped members continue (SIGCONT), the
// peer links and site i's WAN links carry traffic again. Site i's member
// then catches up from the leader, as a member back from a partition does.
func (s *Sites) Rejoin(i int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rejoinLocked(i)
}

func (s *Sites) rejoinLocked(i int) error {
	if s.isolated != i+1 {
		return fmt.Errorf("cluster: site %d is not isolated", i)
	}
	fmt.Fprintf(s.log, "=== sites: rejoin %s at %s\n", s.opts.Sites[i], time.Now().Format(logTime))
	var errs []error
	for j, m := range s.etcd {
		if j != i && m.stopped {
			if err := m.cmd.Process.Signal(syscall.SIGCONT); err != nil {
				errs = append(errs, fmt.Errorf("cluster: continue etcd %s: %w", m.name, err))
			} else {
				m.stopped = false
			}
		}
		errs = append(errs, m.peer.Heal())
	}
	errs = append(errs, s.mesh.Heal(i))
	if err := errors.Join(errs...); err != nil {
		return err
	}
	s.isolated = 0
	return nil
}
