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

// etcdStatus asks every member for its id and whether it leads.
func (s *Sites) etcdStatus(ctx context.Context) (ids []uint64, leader int) {
	ids, leader = make([]uint64, len(s.etcd)), -1
	for i, m := range s.etcd {
		ep := "http://" + m.clientAddr
		cli, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			continue
		}
		c, cancel := context.WithTimeout(ctx, 5*time.Second)
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

// MoveEtcdLeader makes site i's etcd member the leader (etcd's
// MoveLeader through the current leader) and waits until it says it
// leads: at most ten tries a second apart.
func (s *Sites) MoveEtcdLeader(ctx context.Context, i int) error {
	if i < 0 || i >= len(s.etcd) {
		return fmt.Errorf("cluster: move etcd leader: no site %d", i)
	}
	var last error
	for range 10 {
		ids, leader := s.etcdStatus(ctx)
		if leader == i {
			return nil
		}
		if leader >= 0 && ids[i] != 0 {
			cli, err := clientv3.New(clientv3.Config{Endpoints: []string{"http://" + s.etcd[leader].clientAddr},
				DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
			if err == nil {
				c, cancel := context.WithTimeout(ctx, 10*time.Second)
				_, err = cli.MoveLeader(c, ids[i])
				cancel()
				cli.Close()
			}
			last = err
		} else {
			last = fmt.Errorf("no leader, or site %d's member does not answer", i)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
	return fmt.Errorf("cluster: could not make %s's etcd member the leader: %v", s.opts.Sites[i], last)
}
