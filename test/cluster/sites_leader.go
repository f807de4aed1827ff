package cluster

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// EtcdLeader returns the index of the site whose etcd member leads, -1
// when no member says it does (asked through every member, bounded).
func (s *Sites) EtcdLeader(ctx context.Context) int {
	_, leader := s.etcdStatus(ctx)
	return leader
}

// etcdStatus asks every site's member for its id and whether it leads.
func (s *Sites) etcdStatus(ctx context.Context) (ids []uint64, leader int) {
	return etcdStatus(ctx, s.etcdAddrs(), 5*time.Second)
}

func (s *Sites) etcdAddrs() []string {
	addrs := make([]string, len(s.etcd))
	for i, m := range s.etcd {
		addrs[i] = m.clientAddr
	}
	return addrs
}

// MoveEtcdLeader makes site i's etcd member the leader (etcd's
// MoveLeader through the current leader) and waits until it says it
// leads: at most ten tries a second apart.
func (s *Sites) MoveEtcdLeader(ctx context.Context, i int) error {
	if i < 0 || i >= len(s.etcd) {
		return fmt.Errorf("cluster: move etcd leader: no site %d", i)
	}
	if err := moveEtcdLeader(ctx, i, s.etcdAddrs, 5*time.Second); err != nil {
		return fmt.Errorf("cluster: could not make %s's etcd member the leader: %w", s.opts.Sites[i], err)
	}
	return nil
}

// etcdStatus asks the member at each of addrs ("" for one known to be
// down, skipped) for its id and whether it leads, each within wait.
func etcdStatus(ctx context.Context, addrs []string, wait time.Duration) (ids []uint64, leader int) {
	ids, leader = make([]uint64, len(addrs)), -1
	for i, addr := range addrs {
		if addr == "" {
			continue
		}
		ep := "http://" + addr
		cli, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, DialTimeout: wait, Logger: zap.NewNop()})
		if err != nil {
			continue
		}
		c, cancel := context.WithTimeout(ctx, wait)
		if st, err := cli.Status(c, ep); err == nil {
			ids[i] = st.Header.MemberId
			if st.Leader == st.Header.MemberId {
				leader = i
			}
		}
		cancel()
		cli.Close()
	}
	return ids, leader
}

// moveEtcdLeader makes member i (of the client addresses addrs returns,
// "" for one down) the leader through the current one and waits until it
// says it leads: at most ten tries a second apart. The error is the last
// try's.
func moveEtcdLeader(ctx context.Context, i int, addrs func() []string, wait time.Duration) error {
	var last error
	for range 10 {
		as := addrs()
		ids, leader := etcdStatus(ctx, as, wait)
		if leader == i {
			return nil
		}
		if leader >= 0 && ids[i] != 0 {
			cli, err := clientv3.New(clientv3.Config{Endpoints: []string{"http://" + as[leader]},
				DialTimeout: wait, Logger: zap.NewNop()})
			if err == nil {
				c, cancel := context.WithTimeout(ctx, 10*time.Second)
				_, err = cli.MoveLeader(c, ids[i])
				cancel()
				cli.Close()
			}
			last = err
		} else {
			last = fmt.Errorf("no leader, or member %d does not answer", i)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
	return last
}
