package up

import (
	"context"

	"tessera/internal/admin"
	"tessera/internal/kv"
	"tessera/internal/meta/metarpc"
)

// clusterInfo is what the meta process's RPC service says of its cluster
// (Hello, ClusterStatus): the configured name and site, and the store's
// members and maintenance state when it is a replicated one.
func (n *MetaNode) clusterInfo(cfg MetaConfig) metarpc.ClusterInfo {
	info := metarpc.ClusterInfo{Name: cfg.Cluster, Site: cfg.Site}
	if m, ok := n.store.(kv.Members); ok {
		info.Members = m
	}
	if m, ok := n.store.(kv.Maintainer); ok {
		info.Maintenance = m
	}
	return info
}

// describe is the status page's view of the cluster: this process as its
// one meta, and the store's members.
func (n *MetaNode) describe(cfg MetaConfig) func(ctx context.Context) (admin.ClusterView, error) {
	info := n.clusterInfo(cfg)
	return func(ctx context.Context) (admin.ClusterView, error) {
		v := admin.ClusterView{Name: info.Name, Metas: []admin.MetaStatus{{Addr: n.Addr, Site: info.Site, Current: true}}}
		if info.Members != nil {
			v.Replicated = true
			ms, err := info.Members.Members(ctx)
			if err != nil {
				v.MembersErr = err.Error()
			}
			v.Members = admin.Members(ms)
		}
		if info.Maintenance != nil {
			m, err := info.Maintenance.Maintenance(ctx)
			if err != nil {
				v.MaintenanceErr = err.Error()
			} else {
				v.Maintenance = admin.Maintenance(&m)
			}
		}
		return v, nil
	}
}
