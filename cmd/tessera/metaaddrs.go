package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"strings"

	"tessera/internal/admin"
	"tessera/internal/auth"
	"tessera/internal/clusters"
	"tessera/internal/meta/metarpc"
)

// metaAddrFlags find the meta service: --meta takes a list of addresses
// (host:port,host:port) or a cluster's name, --clusters the file cluster
// names are looked up in first (then DNS SRV records; internal/clusters).
type metaAddrFlags struct {
	meta, clusters *string
}

const metaFlagUsage = "meta service `ADDR`: host:port, a list host:port,host:port of a cluster's meta processes " +
	"(the nearest is used, the next when it stops answering), or a cluster's NAME (--clusters file, else DNS SRV _tessera._tcp.NAME)"

func addMetaAddrFlags(fs *flag.FlagSet, usage string) metaAddrFlags {
	return metaAddrFlags{
		meta:     fs.String("meta", "", usage),
		clusters: fs.String("clusters", "", "clusters `FILE`: a line per cluster, NAME HOST:PORT[@SITE]... (default "+clusters.DefaultFile+" when it exists)"),
	}
}

// target is where a client's meta calls go: the addresses, and the
// cluster's name when one was given (every process must answer to it).
type target struct {
	addrs   []string
	cluster string
	from    string // where the addresses came from, for messages
}

// resolve turns --meta (and a cluster name from a mount source, which may
// stand alone) into addresses.
func (f metaAddrFlags) resolve(ctx context.Context, cluster string) (target, error) {
	list := strings.TrimSpace(*f.meta)
	if list != "" && !strings.Contains(list, ":") && !strings.Contains(list, ",") {
		// A name, not an address (addresses carry a port).
		if cluster != "" && cluster != list {
			return target{}, fmt.Errorf("%w: --meta %s names another cluster than the source's %s", errUsage, list, cluster)
		}
		cluster, list = list, ""
	}
	if list != "" {
		addrs := metarpc.SplitAddrs(list)
		for _, a := range addrs {
			if !strings.Contains(a, ":") {
				return target{}, fmt.Errorf("%w: --meta %s: %q is not host:port", errUsage, list, a)
			}
		}
		return target{addrs: addrs, cluster: cluster, from: "--meta"}, nil
	}
	if cluster == "" {
		return target{}, nil
	}
	ms, from, err := clusters.Resolve(ctx, cluster, clusters.Options{File: *f.clusters})
	if err != nil {
		if *f.meta != "" {
			return target{}, fmt.Errorf("--meta %s is taken as a cluster's name (an address needs its :port): %w", *f.meta, err)
		}
		return target{}, err
	}
	t := target{cluster: cluster, from: from}
	for _, m := range ms {
		t.addrs = append(t.addrs, m.Addr)
	}
	return t, nil
}

// dial connects to the nearest of t's meta processes.
func (t target) dial(ctx context.Context, creds *auth.Credentials, log *slog.Logger) (*metarpc.Many, error) {
	m, err := metarpc.DialMany(ctx, t.addrs, metarpc.ManyOptions{DialOptions: metaDialOptions(creds), Cluster: t.cluster, Logger: log})
	if err != nil && t.cluster != "" {
		return nil, fmt.Errorf("cluster %s (meta processes from %s): %w", t.cluster, t.from, err)
	}
	return m, err
}

// describe is admin.Cluster.Describe for a command connected through m:
// every meta process as m measured it, and the store's members as the one
// in use tells them (admins only; others see the processes alone).
func describe(m *metarpc.Many) func(ctx context.Context) (admin.ClusterView, error) {
	return func(ctx context.Context) (admin.ClusterView, error) {
		var v admin.ClusterView
		for _, ep := range m.Endpoints() {
			ms := admin.MetaStatus{Addr: ep.Addr, Site: ep.Site, RTT: ep.RTT, Current: ep.Current}
			if ep.Err != nil {
				ms.Err = ep.Err.Error()
			}
			if v.Name == "" {
				v.Name = ep.Cluster
			}
			v.Metas = append(v.Metas, ms)
		}
		c := m.Current()
		if c == nil {
			return v, nil
		}
		st, err := c.ClusterStatus(ctx)
		if err != nil {
			return v, err
		}
		if st.Cluster != "" {
			v.Name = st.Cluster
		}
		v.Replicated, v.Members, v.MembersErr = st.Replicated, admin.Members(st.Members), st.MembersErr
		v.Maintenance, v.MaintenanceErr = admin.Maintenance(st.Maintenance), st.MaintenanceErr
		return v, nil
	}
}
