package metarpc

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc"

	"tessera/internal/auth"
	"tessera/internal/kv"
	pb "tessera/internal/meta/metarpc/metapb"
)

// What a meta process says of itself and its cluster: Hello (any caller)
// and ClusterStatus (admin). These are not meta.API methods: they describe
// the process answering, not the file system, and each of several meta
// processes answers for itself.

// ClusterInfo is what a meta process tells of its cluster
// (ServeOptions.Cluster).
type ClusterInfo struct {
	Name string // the cluster's name (tessera meta --cluster); "" none
	Site string // this process's site (tessera meta --site); "" none
	// Members lists the replicated store's servers (kv.Members, e.g. the
	// etcd engine); nil when the store is not replicated.
	Members kv.Members
	// Maintenance reports the store's compaction and defragmentation
	// (kv.Maintainer, e.g. the etcd engine); nil when it has none.
	Maintenance kv.Maintainer
}

// Hello is a meta process's answer to Client.Hello.
type Hello struct {
	Cluster string
	Site    string
}

// ClusterStatus is a meta process's view of its cluster.
type ClusterStatus struct {
	Cluster    string
	Site       string
	Replicated bool        // the store has members (Members below)
	Members    []kv.Member // the store's servers and their health
	MembersErr string      // why the members could not be listed
	// Maintenance is the store's compaction and defragmentation state;
	// nil when the store has none or it could not be read (then
	// MaintenanceErr says why).
	Maintenance    *kv.Maintenance
	MaintenanceErr string
}

// Hello implements the Hello RPC: any authenticated caller (the gate let
// it through).
func (s *server) Hello(ctx context.Context, _ *pb.Empty) (*pb.HelloReply, error) {
	return &pb.HelloReply{Cluster: s.cluster.Name, Site: s.cluster.Site}, nil
}

// ClusterStatus implements the ClusterStatus RPC, for admins only: member
// addresses and health are the cluster's internals.
func (s *server) ClusterStatus(ctx context.Context, _ *pb.Empty) (*pb.ClusterStatusReply, error) {
	id, ok := auth.FromContext(ctx)
	if !ok {
		return nil, statusOf(fmt.Errorf("ClusterStatus: %w", auth.ErrUnauthenticated))
	}
	if err := id.Check(auth.Administer); err != nil {
		return nil, statusOf(fmt.Errorf("ClusterStatus: %w", err))
	}
	rep := &pb.ClusterStatusReply{Cluster: s.cluster.Name, Site: s.cluster.Site}
	if s.cluster.Maintenance != nil {
		m, err := s.cluster.Maintenance.Maintenance(ctx)
		if err != nil {
			rep.MaintenanceErr = err.Error()
		} else {
			rep.Maintenance = &pb.StoreMaintenance{CompactedRev: m.CompactedRev, CompactedAt: unixNs(m.CompactedAt),
				DefragAt: unixNs(m.DefragAt), DefragMember: m.DefragMember, Err: m.Err, At: unixNs(m.At)}
		}
	}
	if s.cluster.Members == nil {
		return rep, nil
	}
	rep.Replicated = true
	ms, err := s.cluster.Members.Members(ctx)
	if err != nil {
		rep.MembersErr = err.Error()
	}
	for _, m := range ms {
		rep.Members = append(rep.Members, &pb.StoreMember{Name: m.Name, Addr: m.Addr, Leader: m.Leader,
			Healthy: m.Healthy, Err: m.Err, Rev: m.Rev, DbSize: m.DBSize, DbInUse: m.DBInUse})
	}
	return rep, nil
}

// Hello asks the meta service for its cluster's name and its site; it is
// the cheap call by which DialMany measures round trips.
func (c *Client) Hello(ctx context.Context) (Hello, error) {
	var rep *pb.HelloReply
	err := c.call(ctx, "Hello", func(ctx context.Context, opts ...grpc.CallOption) (err error) {
		rep, err = c.mc.Hello(ctx, &pb.Empty{}, opts...)
		return err
	})
	if err != nil {
		return Hello{}, err
	}
	return Hello{Cluster: rep.Cluster, Site: rep.Site}, nil
}

// ClusterStatus asks the meta service for its view of the cluster (admin
// only).
func (c *Client) ClusterStatus(ctx context.Context) (ClusterStatus, error) {
	var rep *pb.ClusterStatusReply
	err := c.call(ctx, "ClusterStatus", func(ctx context.Context, opts ...grpc.CallOption) (err error) {
		rep, err = c.mc.ClusterStatus(ctx, &pb.Empty{}, opts...)
		return err
	})
	if err != nil {
		return ClusterStatus{}, err
	}
	st := ClusterStatus{Cluster: rep.Cluster, Site: rep.Site, Replicated: rep.Replicated, MembersErr: rep.MembersErr,
		MaintenanceErr: clip(rep.MaintenanceErr)}
	for _, m := range rep.Members {
		st.Members = append(st.Members, kv.Member{Name: m.Name, Addr: m.Addr, Leader: m.Leader,
			Healthy: m.Healthy, Err: m.Err, Rev: m.Rev, DBSize: m.DbSize, DBInUse: m.DbInUse})
	}
	if m := rep.Maintenance; m != nil {
		st.Maintenance = &kv.Maintenance{CompactedRev: m.CompactedRev, CompactedAt: fromUnixNs(m.CompactedAt),
			DefragAt: fromUnixNs(m.DefragAt), DefragMember: clip(m.DefragMember), Err: clip(m.Err), At: fromUnixNs(m.At)}
	}
	return st, nil
}

// maxStatusText bounds the text fields of a status reply kept.
const maxStatusText = 1024

// clip bounds a text field of a reply: never kept whole when too long.
func clip(s string) string {
	if len(s) > maxStatusText {
		return s[:maxStatusText] + "…"
	}
	return s
}

// unixNs is t in unix ns, 0 for the zero time.
func unixNs(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// fromUnixNs is unixNs's inverse.
func fromUnixNs(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}
